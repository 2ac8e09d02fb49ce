// Tests for exercise m2.05 (register tiling). The same tests grade your skeleton and the
// reference solution; the test body every GEMM step shares is in course/gemm_testing.h.
// (The check of the machine code, 128-bit loads and no spills, is check_sass.py.)
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "course/gemm.h"
#include "course/gemm_testing.h"
#include "course/testing.h"
#include "register_tiling.h"

namespace {

constexpr const char* kHint1d =
    "look at TODO(m2.05a) (copy one element of each tile, zero outside the matrices), "
    "TODO(m2.05b) (the register tile: one value of B times TM values of A) and TODO(m2.05c) "
    "(write the TM results with alpha and beta) in "
    "month2/05_register_tiling/sgemm_1d_register_tile.cu";

constexpr const char* kHint2d =
    "look at TODO(m2.05d) (the copies of a tile: A loaded into registers and stored "
    "transposed; B copied asynchronously as float4), TODO(m2.05e) (the fragments: float4 reads of A and B from shared memory), "
    "TODO(m2.05f) (the outer product of the fragments), TODO(m2.05g) (write the thread tile "
    "with alpha and beta, float4 or element by element) and TODO(m2.05h) (the launch: when "
    "float4 is allowed) in month2/05_register_tiling/sgemm_2d_register_tile.cu";

// --- Part 1: the 1D register tile --------------------------------------------------------

class Sgemm1dRegisterTileTest : public course::GpuTest,
                                public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(Sgemm1dRegisterTileTest, MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::sgemm_1d_register_tile, GetParam(),
                                        kHint1d);
}

// Square, rectangular and awkward shapes, empty ones, and alpha / beta variants: see
// course::gemm_test_cases().
INSTANTIATE_TEST_SUITE_P(Shapes, Sgemm1dRegisterTileTest,
                         ::testing::ValuesIn(course::gemm_test_cases()), course::gemm_case_name);

class Sgemm1dArgumentsTest : public course::GpuTest {};

TEST_F(Sgemm1dArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::sgemm_1d_register_tile, kHint1d);
}

TEST_F(Sgemm1dArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::sgemm_1d_register_tile, kHint1d);
}

// --- Part 2: the 2D register tile --------------------------------------------------------

class Sgemm2dRegisterTileTest : public course::GpuTest,
                                public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(Sgemm2dRegisterTileTest, MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::sgemm_2d_register_tile, GetParam(),
                                        kHint2d);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Sgemm2dRegisterTileTest,
                         ::testing::ValuesIn(course::gemm_test_cases()), course::gemm_case_name);

// Shapes aimed at the 2D kernel's own edges: the float4 path (K and N multiples of 4) with
// a K that is not a multiple of the tile depth (the short tile is the first one), the
// element-by-element path with a K that is not a multiple of 4, a row or column count just
// past a 128 x 128 tile, and sizes big enough for the large tile with every edge ragged.
INSTANTIATE_TEST_SUITE_P(
    TileEdges, Sgemm2dRegisterTileTest,
    ::testing::Values(course::GemmCase{{256, 256, 7}, 1.0f, 0.0f},
                      course::GemmCase{{256, 260, 13}, 1.0f, 0.0f},
                      course::GemmCase{{256, 260, 20}, 1.0f, 0.0f},
                      course::GemmCase{{200, 132, 1001}, 1.0f, 0.0f},
                      course::GemmCase{{1030, 1028, 300}, 1.0f, 0.0f},
                      course::GemmCase{{1030, 1028, 300}, 0.5f, -0.75f},
                      course::GemmCase{{1537, 2049, 259}, 1.0f, 0.0f},
                      course::GemmCase{{2048, 2048, 2048}, 1.0f, 0.0f}),
    course::gemm_case_name);

class Sgemm2dArgumentsTest : public course::GpuTest {};

TEST_F(Sgemm2dArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::sgemm_2d_register_tile, kHint2d);
}

TEST_F(Sgemm2dArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::sgemm_2d_register_tile, kHint2d);
}

// float4 copies and stores need 16-byte aligned rows. Matrices that start 4 bytes past an
// aligned address (a slice of a larger tensor, say) must still be right: the launcher has
// to notice and take the element-by-element path.
TEST_F(Sgemm2dArgumentsTest, MisalignedPointersAreHandled) {
  const course::GemmShape shape{160, 136, 72};  // every size a multiple of 4
  const std::size_t MN = static_cast<std::size_t>(shape.M) * shape.N;
  const std::uint64_t seed = course::test_seed() + 11;
  const auto A = course::random_uniform<float>(static_cast<std::size_t>(shape.M) * shape.K, seed);
  const auto B = course::random_uniform<float>(static_cast<std::size_t>(shape.K) * shape.N, seed + 1);
  const auto C0 = course::random_uniform<float>(MN, seed + 2);
  const float alpha = 1.25f, beta = -0.5f;
  const std::vector<double> expected = course::reference_gemm(shape, alpha, A, B, beta, C0);

  for (const std::size_t offset : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
    // One extra float in front: the matrix starts `offset` floats into the buffer.
    auto pad = [offset](const std::vector<float>& values) {
      std::vector<float> padded(values.size() + 4, 0.0f);
      std::copy(values.begin(), values.end(), padded.begin() + static_cast<std::ptrdiff_t>(offset));
      return padded;
    };
    auto device_a = course::DeviceBuffer<float>::from_host(pad(A));
    auto device_b = course::DeviceBuffer<float>::from_host(pad(B));
    auto device_c = course::DeviceBuffer<float>::from_host(pad(C0));
    course::impl::sgemm_2d_register_tile(shape.M, shape.N, shape.K, alpha,
                                         device_a.data() + offset, device_b.data() + offset, beta,
                                         device_c.data() + offset, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> all = device_c.to_host();
    const std::vector<float> c(all.begin() + static_cast<std::ptrdiff_t>(offset),
                               all.begin() + static_cast<std::ptrdiff_t>(offset + MN));
    EXPECT_TRUE(course::verify(c, expected, course::gemm_tolerance(course::Dtype::fp32, shape.K)))
        << "A, B and C start " << offset * sizeof(float)
        << " bytes past a 16-byte boundary: float4 accesses are not allowed there (a misaligned "
        << "float4 load faults or reads the wrong bytes). " << kHint2d;
  }
}

}  // namespace
