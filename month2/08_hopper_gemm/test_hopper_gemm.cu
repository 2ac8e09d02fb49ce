// Tests for exercise m2.08 (bonus: Hopper's wgmma and TMA). The same tests grade your
// skeleton and the reference solution: the month-2 GEMM test body (course/gemm_testing.h:
// float64 reference from the rounded inputs, C poisoned, guard zones, fp16 / bf16
// tolerance) on every shape of the month-2 list the TMA can copy (K and N multiples of 8),
// then shapes aimed at the 128 x 256 x 64 tile and its 4-stage pipeline. On a GPU that is
// not a Hopper (compute capability 9.0) every test reports itself skipped, with the reason.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "course/gemm_testing.h"
#include "course/hopper.h"
#include "hopper_gemm.h"

namespace {

constexpr const char* kHint =
    "look at TODO(m2.08a) (the producer: wait for an empty stage, announce the bytes, issue "
    "the TMA copies) and TODO(m2.08b) (the consumers: wait for a full stage, wgmma on its "
    "slices, give the previous stage back) in month2/08_hopper_gemm/hopper_gemm.cu";

class HopperTest : public course::GpuTest {
 protected:
  void SetUp() override {
    course::GpuTest::SetUp();
    if (IsSkipped()) return;
    // wgmma and the TMA exist only in sm_90a code, which runs on a Hopper (H100, H200) only:
    // not on older GPUs, nor on newer ones.
    if (!course::hopper::is_hopper_gpu()) {
      GTEST_SKIP() << "needs compute capability 9.0 (a Hopper, H100 or H200: wgmma and the TMA "
                      "exist only in sm_90a code); this GPU has "
                   << course::device_compute_capability().text();
    }
  }
};

// The month-2 list, less the shapes whose rows the TMA cannot copy, then this kernel's own.
std::vector<course::GemmCase> hopper_cases() {
  std::vector<course::GemmCase> cases;
  for (const course::GemmCase& c : course::gemm_test_cases()) {
    if (c.shape.K % 8 == 0 && c.shape.N % 8 == 0) cases.push_back(c);
  }
  for (const course::GemmCase& c : std::vector<course::GemmCase>{
           {{1, 8, 8}, 1.0f, 0.0f},            // one row, one 16-byte row of B
           {{37, 48, 0}, 1.0f, 0.5f},          // K = 0: C = beta * C
           {{128, 256, 64}, 1.0f, 0.0f},       // exactly one tile and one stage
           {{129, 264, 72}, 1.0f, 0.0f},       // one more in every direction
           {{100, 256, 8}, 1.5f, 0.0f},        // K shorter than a slice of 16
           {{300, 520, 1000}, 0.5f, -0.75f},   // many rounds of the 4 stages
           {{2048, 2048, 2048}, 1.0f, 0.0f},
           {{4093, 4088, 4096}, 1.0f, 0.0f}}) {  // M free, every edge ragged (sampled rows)
    cases.push_back(c);
  }
  return cases;
}

class HopperGemmTest : public HopperTest, public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(HopperGemmTest, Fp16MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::hopper_gemm, GetParam(), kHint);
}

TEST_P(HopperGemmTest, Bf16MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::hopper_gemm_bf16, GetParam(), kHint);
}

INSTANTIATE_TEST_SUITE_P(Shapes, HopperGemmTest, ::testing::ValuesIn(hopper_cases()),
                         course::gemm_case_name);

class HopperGemmArgumentsTest : public HopperTest {};

TEST_F(HopperGemmArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::hopper_gemm, kHint);
}

TEST_F(HopperGemmArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::hopper_gemm, kHint,
                                     course::GemmShape{256, 512, 256});
}

// The TMA copies rows of a multiple of 16 bytes from 16-byte aligned addresses: anything
// else is refused with a message that says so (m2.07's mma_gemm takes any shape).
TEST_F(HopperGemmArgumentsTest, ShapesAndPointersTheTmaCannotCopyAreRejected) {
  course::DeviceBuffer<float> buffer(64 * 64);
  const auto* h = reinterpret_cast<const __half*>(buffer.data());
  for (const course::GemmShape& shape :
       {course::GemmShape{32, 36, 32}, course::GemmShape{32, 32, 20}}) {
    try {
      course::impl::hopper_gemm(shape.M, shape.N, shape.K, 1.0f, h, h, 0.0f, buffer.data(),
                                nullptr);
      ADD_FAILURE() << "M x N x K = " << course::to_string(shape)
                    << " was accepted: the TMA needs K and N to be multiples of 8";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("multiples of 8"), std::string::npos)
          << error.what();
    }
  }
  EXPECT_THROW(course::impl::hopper_gemm(32, 32, 32, 1.0f, h + 1, h, 0.0f, buffer.data(), nullptr),
               std::invalid_argument)
      << "A 2 bytes past a 16-byte boundary cannot be copied by the TMA";
  EXPECT_THROW(course::impl::hopper_gemm(32, 32, 32, 1.0f, h, h + 4, 0.0f, buffer.data(), nullptr),
               std::invalid_argument)
      << "B 8 bytes past a 16-byte boundary cannot be copied by the TMA";
  CUDA_CHECK(cudaDeviceSynchronize());
}

// C needs no alignment: 4 bytes past an 8-byte boundary takes the one-float stores.
TEST_F(HopperGemmArgumentsTest, MisalignedCIsHandled) {
  course::expect_gemm_handles_misaligned_pointers(course::impl::hopper_gemm,
                                                  course::GemmShape{136, 264, 72}, {8}, kHint);
}

}  // namespace
