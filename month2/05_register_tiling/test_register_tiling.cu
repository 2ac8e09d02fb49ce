// Tests for exercise m2.05 (register tiling). The same tests grade your skeleton and the
// reference solution; the test body every GEMM step shares is in course/gemm_testing.h.
// (The check of the machine code, 128-bit loads and no spills, is check_sass.py.)
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
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
// Two of its TODOs can be checked alone, before the others (README.md, "Check it"):
//   ./course grade m2_05 --only Sgemm2dTodoH   the float4 decision (host code)
//   ./course grade m2_05 --only Sgemm2dTodoG   the epilogue: K = 0 runs only TODO(m2.05g)
// TODO(m2.05d), (e) and (f) only give a product together: the shape tests check them.

// The float4 path must be taken whenever it is legal, or the kernel's 128-bit loads, copies
// and stores (the check_sass.py check) never run. Pointers are only compared, never read.
TEST(Sgemm2dTodoH, Float4PathOnlyWhenEveryRowIsAligned) {
  const auto at = [](std::uintptr_t address) { return reinterpret_cast<const float*>(address); };
  const float* aligned = at(0x10000);
  const char* hint = "look at TODO(m2.05h) in month2/05_register_tiling/sgemm_2d_register_tile.cu";
  EXPECT_TRUE(course::impl::sgemm_2d_uses_float4(4096, 4096, aligned, aligned, aligned))
      << "N = K = 4096 with 16-byte aligned A, B and C: the float4 path is legal and must be "
         "taken; " << hint;
  EXPECT_FALSE(course::impl::sgemm_2d_uses_float4(4098, 4096, aligned, aligned, aligned))
      << "N % 4 != 0: rows of B and C after the first are not 16-byte aligned; " << hint;
  EXPECT_FALSE(course::impl::sgemm_2d_uses_float4(4096, 4090, aligned, aligned, aligned))
      << "K % 4 != 0: rows of A after the first are not 16-byte aligned; " << hint;
  for (int which = 0; which < 3; ++which) {
    const float* off = at(0x10000 + 4);
    EXPECT_FALSE(course::impl::sgemm_2d_uses_float4(4096, 4096, which == 0 ? off : aligned,
                                                     which == 1 ? off : aligned,
                                                     which == 2 ? off : aligned))
        << "matrix " << "ABC"[which] << " starts 4 bytes past a 16-byte boundary; " << hint;
  }
}

// With K = 0 there is no tile to multiply: C = beta * C comes from the epilogue alone.
// Widths that are multiples of 4 (the float4 stores once TODO(m2.05h) is done) and not.
class Sgemm2dTodoG : public course::GpuTest,
                     public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(Sgemm2dTodoG, EpilogueAloneWhenKIsZero) {
  course::expect_gemm_matches_reference(
      course::impl::sgemm_2d_register_tile, GetParam(),
      "K = 0 runs only the epilogue: look at TODO(m2.05g) (write alpha * acc + beta * C, and "
      "do not read C when beta == 0) in month2/05_register_tiling/sgemm_2d_register_tile.cu");
}

INSTANTIATE_TEST_SUITE_P(KIsZero, Sgemm2dTodoG,
                         ::testing::Values(course::GemmCase{{130, 136, 0}, 1.0f, 0.5f},
                                           course::GemmCase{{130, 136, 0}, 1.0f, 0.0f},
                                           course::GemmCase{{67, 45, 0}, 2.0f, -0.75f}),
                         course::gemm_case_name);

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

// float4 copies and stores need 16-byte aligned rows: matrices 4, 8 and 12 bytes past an
// aligned address must take the element-by-element path.
TEST_F(Sgemm2dArgumentsTest, MisalignedPointersAreHandled) {
  course::expect_gemm_handles_misaligned_pointers(course::impl::sgemm_2d_register_tile,
                                                  course::GemmShape{160, 136, 72},  // all % 4 == 0
                                                  {1, 2, 3}, kHint2d);
}

}  // namespace
