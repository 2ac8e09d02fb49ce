// Tests for exercise m2.04, part 2: the GEMM with the transposed B tile, unpadded and padded.
// The same tests grade your skeleton and the reference solution; the test body is the one
// every month-2 GEMM step shares (course/gemm_testing.h).
#include <gtest/gtest.h>

#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>

#include "bank_conflicts.h"
#include "course/gemm_testing.h"
#include "course/testing.h"

namespace {

struct Variant {
  const char* name;
  course::GemmFn gemm;
  const char* hint;
};

const Variant kVariants[] = {
    {"conflicted", course::impl::gemm_conflicted,
     "gemm_conflicted runs the kernel of TODO(m2.04c) (declare Bt, store the B tile transposed "
     "into it, accumulate As[ty][k] * Bt[tx][k]) in "
     "month2/04_bank_conflicts/gemm_transposed_tile.cu"},
    {"padded", course::impl::gemm_padded,
     "gemm_padded runs the kernel of TODO(m2.04c) with the padding of TODO(m2.04d): look at "
     "both in month2/04_bank_conflicts/gemm_transposed_tile.cu"},
};

// How GoogleTest shows the parameter of a failing test.
void PrintTo(const Variant& variant, std::ostream* out) { *out << "gemm_" << variant.name; }

class GemmTransposedTileTest
    : public course::GpuTest,
      public ::testing::WithParamInterface<std::tuple<Variant, course::GemmCase>> {};

TEST_P(GemmTransposedTileTest, MatchesFloat64Reference) {
  const auto& [variant, gemm_case] = GetParam();
  course::expect_gemm_matches_reference(variant.gemm, gemm_case, variant.hint);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmTransposedTileTest,
                         ::testing::Combine(::testing::ValuesIn(kVariants),
                                            ::testing::ValuesIn(course::gemm_test_cases())),
                         [](const auto& info) {
                           const Variant& variant = std::get<0>(info.param);
                           const ::testing::TestParamInfo<course::GemmCase> gemm_case(
                               std::get<1>(info.param), info.index);
                           return std::string(variant.name) + "_" +
                                  course::gemm_case_name(gemm_case);
                         });

class GemmTransposedTileArgumentsTest : public course::GpuTest,
                                        public ::testing::WithParamInterface<Variant> {};

TEST_P(GemmTransposedTileArgumentsTest, NegativeSizesAreRejected) {
  course::expect_gemm_rejects_negative_sizes(GetParam().gemm, GetParam().hint);
}

TEST_P(GemmTransposedTileArgumentsTest, NullPointersAreRejected) {
  const Variant& variant = GetParam();
  course::DeviceBuffer<float> buffer(64 * 64);
  float* p = buffer.data();
  struct Pointers {
    const float* A;
    const float* B;
    float* C;
  };
  for (const Pointers& bad : {Pointers{nullptr, p, p}, Pointers{p, nullptr, p},
                              Pointers{p, p, nullptr}}) {
    EXPECT_THROW(variant.gemm(8, 8, 8, 1.0f, bad.A, bad.B, 0.0f, bad.C, nullptr),
                 std::invalid_argument)
        << "gemm_" << variant.name << " accepted a null pointer (A = " << bad.A
        << ", B = " << bad.B << ", C = " << bad.C << ")";
  }
}

TEST_P(GemmTransposedTileArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(GetParam().gemm, GetParam().hint);
}

INSTANTIATE_TEST_SUITE_P(Variants, GemmTransposedTileArgumentsTest,
                         ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
