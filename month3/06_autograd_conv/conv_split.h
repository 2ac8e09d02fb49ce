// Exercise m3.06, given code: two ways the CUDA operators split a convolution into pieces
// that the forward machinery runs (autograd_conv_given.cuh uses both). Host code, no GPU:
// plain integer arithmetic.
//
// 1. grad-input by stride phases. For stride 1, dx is a forward convolution of dy with the
//    flipped, transposed filters (README.md). For stride > 1 it is not: input row h was read
//    only through the filter rows r with h + pad - r * dilation a multiple of the stride. But
//    which rows those are depends on h modulo the stride only. So split dx by phases: for
//    each (ph, pw) in [0, stride_h) x [0, stride_w), the rows h = ph + stride_h * i (and the
//    columns w = pw + stride_w * j) receive from one fixed subset of the taps, every tap of it
//    at one fixed output offset; that is a stride-1 convolution of dy with those taps, flipped
//    and transposed. Each phase runs as a stride-1 forward (m3.04 / m3.03 in float32, m3.05's
//    tensor cores in float16 and bfloat16), and its output lands in the strided positions of
//    dx that are that phase's: every dx element is written exactly once, no atomics. A phase
//    that no tap reaches (a 1 x 1 filter with stride 2: three phases of four) is zeros.
//
//    One axis (rows; columns alike), with s = stride, d = dilation, g = gcd(s, d):
//      the taps of phase ph are r = first_tap + j * tap_step, j = 0 .. taps - 1, with
//      tap_step = s / g, first_tap the smallest r >= 0 with (ph + pad - r d) % s == 0;
//      row i of the phase (dx row ph + s i) reads dy row i + offset - j * d / g, with
//      offset = (ph + pad - first_tap d) / s (exact, maybe negative).
//    As a forward convolution (a cross-correlation) with the taps reversed, j' = taps - 1 - j,
//    that is padding (taps - 1) (d / g) - offset and dilation d / g. That padding may be
//    negative, and the forward's output need not have the phase's `rows` rows; so the phase
//    runs with a padding `pad` >= 0 large enough, and its output row i + shift is dx row
//    ph + s i (shift = pad - the exact padding >= 0; the rows around are not used).
//
// 2. Batch chunks. The kernels index a tensor with int (require_conv_arguments: fewer than
//    2^31 elements). A larger batch runs as slices of whole images, each under the limit;
//    every image's outputs depend on that image only, and dw and db add the slices'
//    partial sums in slice order. COURSE_CONV_MAX_ELEMENTS lowers the limit (tests use it to
//    make small shapes take several slices).
//
// 3. Workspace budgets. The float32 paths that build an im2col-style matrix in a workspace
//    (the forward's X_col, grad-weight's X_col, grad-input's dX_col) put as many images into
//    one matrix as fit a budget of bytes. The defaults are constants; for measurement (how a
//    budget's L2 residency pays) and for tests (a small budget makes a small shape take
//    several chunks), environment variables override them, read at every call like
//    COURSE_CONV_MAX_ELEMENTS:
//      COURSE_CONV_IM2COL_BUDGET_BYTES         the forward's X_col (m3.04), default 1 GiB
//                                              (kIm2colWorkspaceBudgetBytes); a layer whose one
//                                              image does not fit goes to m3.03
//      COURSE_CONV_WGRAD_COLUMN_BUDGET_BYTES   grad-weight's X_col, default 256 MiB
//      COURSE_CONV_DGRAD_COLUMN_BUDGET_BYTES   grad-input's dX_col (conv_grad_input_cols.h),
//                                              default 32 MiB
//    Each is a whole number of bytes from 1 to 2^40; anything else is an error naming it.
//    They change speed only: the results are the same sums, in chunks.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include "course/conv.h"

namespace course {

// One axis of a phase (see above). rows == 0: the phase has no rows (ph >= H); taps == 0:
// no filter row reaches them, they are zeros.
struct PhaseAxis {
  int phase = 0;      // dx rows phase, phase + stride, ...
  int rows = 0;       // how many: ceil((H - phase) / stride)
  int taps = 0;       // the filter rows that reach them: first_tap + j * tap_step, j < taps
  int first_tap = 0;
  int tap_step = 1;
  int dilation = 1;   // of the phase's forward: tap_step * dilation / stride
  int pad = 0;        // of the phase's forward, >= 0
  int shift = 0;      // the phase's output row i + shift is dx row phase + stride * i
};

// The axis of phase `phase` for input size `in` (H), output size `out` (P), filter size
// `filter` (R). Throws std::invalid_argument when the phase's forward would not fit in int.
inline PhaseAxis plan_phase_axis(int in, int out, int filter, int stride, int pad, int dilation,
                                 int phase) {
  PhaseAxis a;
  a.phase = phase;
  a.rows = phase < in ? (in - phase + stride - 1) / stride : 0;
  int g = stride, b = dilation;  // gcd(stride, dilation)
  while (b != 0) {
    const int t = g % b;
    g = b, b = t;
  }
  a.tap_step = stride / g;
  a.dilation = dilation / g;
  // The taps' residues r * dilation mod stride repeat with period tap_step: the first tap,
  // if any, is among r = 0 .. tap_step - 1. (Tests of the sign first: % of a negative.)
  a.first_tap = -1;
  for (int r = 0; r < std::min(filter, a.tap_step) && a.first_tap < 0; ++r) {
    const std::int64_t numerator = std::int64_t{phase} + pad - std::int64_t{r} * dilation;
    if (((numerator % stride) + stride) % stride == 0) a.first_tap = r;
  }
  if (a.rows == 0 || a.first_tap < 0) {
    a.taps = 0, a.first_tap = 0;
    return a;
  }
  a.taps = (filter - 1 - a.first_tap) / a.tap_step + 1;
  // An exact multiple of the stride, so the division is exact also when it is negative.
  const std::int64_t offset =
      (std::int64_t{phase} + pad - std::int64_t{a.first_tap} * dilation) / stride;
  const std::int64_t span = std::int64_t{a.taps - 1} * a.dilation;  // the reversed taps' reach
  const std::int64_t exact_pad = span - offset;
  // The forward's output has out + 2 pad - span rows, and row i + pad - exact_pad must exist
  // for every i < rows: pad >= exact_pad and out + pad + exact_pad - span >= rows.
  const std::int64_t pad64 =
      std::max<std::int64_t>({0, exact_pad, std::int64_t{a.rows} + span - out - exact_pad});
  const std::int64_t forward_rows = std::int64_t{out} + 2 * pad64 - span;
  if (pad64 > std::numeric_limits<int>::max() / 4 || forward_rows > std::numeric_limits<int>::max())
    throw std::invalid_argument("grad-input phase: the phase's forward does not fit in int");
  a.pad = static_cast<int>(pad64);
  a.shift = static_cast<int>(pad64 - exact_pad);
  return a;
}

// Phase (ph, pw) of dx for the convolution s: its two axes, and `forward`, the stride-1
// convolution that computes it (input dy: N x K x P x Q; filters: C of K x taps_h x taps_w;
// output N x C x forward.P() x forward.Q(), of which rows shift_h .. shift_h + rows_h - 1 and
// the columns alike are the phase's). has_taps() false: the phase is zeros, `forward` unused.
struct GradInputPhase {
  PhaseAxis h, w;
  ConvShape forward;
  bool has_rows() const { return h.rows > 0 && w.rows > 0; }
  bool has_taps() const { return h.taps > 0 && w.taps > 0; }
  // The phase IS dx (stride 1, nothing to skip): the forward can write dx directly.
  bool is_whole(const ConvShape& s) const {
    return s.stride_h == 1 && s.stride_w == 1 && h.shift == 0 && w.shift == 0 &&
           forward.P() == s.H && forward.Q() == s.W;
  }
};

inline GradInputPhase plan_grad_input_phase(const ConvShape& s, int ph, int pw) {
  GradInputPhase phase;
  phase.h = plan_phase_axis(s.H, s.P(), s.R, s.stride_h, s.pad_h, s.dilation_h, ph);
  phase.w = plan_phase_axis(s.W, s.Q(), s.S, s.stride_w, s.pad_w, s.dilation_w, pw);
  ConvShape& t = phase.forward;
  t.N = s.N, t.C = s.K, t.H = s.P(), t.W = s.Q(), t.K = s.C;
  t.R = std::max(1, phase.h.taps), t.S = std::max(1, phase.w.taps);
  t.stride_h = t.stride_w = 1;
  t.pad_h = phase.h.pad, t.pad_w = phase.w.pad;
  t.dilation_h = phase.h.dilation, t.dilation_w = phase.w.dilation;
  return phase;
}

// The two copies around a phase's forward, one element each (the kernels in
// autograd_conv_given.cuh run one thread per element; host code can run them too).
//
// Element i of the phase's filters w2 [C][K][taps_h][taps_w] is element phase_filter_source(i)
// of w [K][C][R][S]: the phase's taps, reversed (j -> taps - 1 - j) and transposed (k <-> c).
__host__ __device__ inline std::int64_t phase_filter_source(const ConvShape& s,
                                                            const GradInputPhase& phase,
                                                            std::int64_t i) {
  const int taps_h = phase.h.taps, taps_w = phase.w.taps;
  const int j = static_cast<int>(i % taps_w);
  const int a = static_cast<int>((i / taps_w) % taps_h);
  const int k = static_cast<int>((i / (std::int64_t{taps_w} * taps_h)) % s.K);
  const int c = static_cast<int>(i / (std::int64_t{taps_w} * taps_h * s.K));
  const int r = phase.h.first_tap + (taps_h - 1 - a) * phase.h.tap_step;
  const int t = phase.w.first_tap + (taps_w - 1 - j) * phase.w.tap_step;
  return conv_weight_index(ConvLayout::nchw, s, k, c, r, t);
}

// Element i of a phase's scatter, i < forward.N * C * rows_h * rows_w, counted in the order of
// the phase output's layout (so that consecutive i read consecutive values of it):
//   dx[n0 + n][c][phase_h + stride_h a][phase_w + stride_w b] (NCHW, offset `dx`)
//     = y[n][c][a + shift_h][b + shift_w] (the phase's output, `layout`, offset `y`).
struct PhaseScatterIndex {
  std::int64_t dx, y;
};
__host__ __device__ inline PhaseScatterIndex phase_scatter_index(const ConvShape& s,
                                                                 const GradInputPhase& phase,
                                                                 ConvLayout layout, int n0,
                                                                 std::int64_t i) {
  const int rows = phase.h.rows, columns = phase.w.rows;
  int n, c, a, b;
  if (layout == ConvLayout::nchw) {
    b = static_cast<int>(i % columns);
    a = static_cast<int>((i / columns) % rows);
    c = static_cast<int>((i / (std::int64_t{columns} * rows)) % s.C);
    n = static_cast<int>(i / (std::int64_t{columns} * rows * s.C));
  } else {
    c = static_cast<int>(i % s.C);
    b = static_cast<int>((i / s.C) % columns);
    a = static_cast<int>((i / (std::int64_t{s.C} * columns)) % rows);
    n = static_cast<int>(i / (std::int64_t{s.C} * columns * rows));
  }
  const int h = phase.h.phase + s.stride_h * a, col = phase.w.phase + s.stride_w * b;
  return {conv_input_index(ConvLayout::nchw, s, n0 + n, c, h, col),
          conv_output_index(layout, phase.forward, n, c, a + phase.h.shift, b + phase.w.shift)};
}

// The most elements one image has in any tensor the phases' forwards read or write: dy's
// K P Q and each phase output's C x forward.P() x forward.Q() (a little more than dx's rows).
inline std::int64_t grad_input_phase_elements_per_image(const ConvShape& s) {
  std::int64_t most = std::int64_t{s.K} * s.P() * s.Q();
  for (int ph = 0; ph < s.stride_h; ++ph) {
    for (int pw = 0; pw < s.stride_w; ++pw) {
      const GradInputPhase phase = plan_grad_input_phase(s, ph, pw);
      if (phase.has_rows() && phase.has_taps())
        most = std::max(most, std::int64_t{s.C} * phase.forward.P() * phase.forward.Q());
    }
  }
  return most;
}

// Whether some phase of dx has rows but no taps (a 1 x 1 filter at stride 2: three of the
// four): its part of dx is zeros.
inline bool grad_input_has_zero_phases(const ConvShape& s) {
  for (int ph = 0; ph < s.stride_h; ++ph) {
    for (int pw = 0; pw < s.stride_w; ++pw) {
      const GradInputPhase phase = plan_grad_input_phase(s, ph, pw);
      if (phase.has_rows() && !phase.has_taps()) return true;
    }
  }
  return false;
}

// The environment variable `name` as a whole number from `low` to `high`, or `fallback` where
// it is unset or empty. Read at every call, so that a test can set it. Throws
// std::invalid_argument naming the variable for anything else ("lots", "-5", "12 MiB", a
// value out of range).
inline std::int64_t env_whole_number(const char* name, std::int64_t low, std::int64_t high,
                                     std::int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || errno == ERANGE || value < low || value > high) {
    throw std::invalid_argument(std::string(name) + " must be a whole number from " +
                                std::to_string(low) + " to " + std::to_string(high) + ", got '" +
                                text + "'");
  }
  return value;
}

// The most elements a tensor may have in one kernel call: 2^31 - 1, or less where the
// environment variable COURSE_CONV_MAX_ELEMENTS says so.
inline std::int64_t conv_max_elements() {
  constexpr std::int64_t kLimit = std::numeric_limits<int>::max();
  return env_whole_number("COURSE_CONV_MAX_ELEMENTS", 1, kLimit, kLimit);
}

// The workspace budgets of part 3 above, in bytes.
inline constexpr std::int64_t kMaxBudgetBytes = std::int64_t{1} << 40;
inline constexpr std::int64_t kWgradColumnBudgetBytes = std::int64_t{256} << 20;
inline constexpr std::int64_t kDgradColumnBudgetBytes = std::int64_t{32} << 20;

inline std::int64_t im2col_budget_bytes(std::int64_t fallback) {
  return env_whole_number("COURSE_CONV_IM2COL_BUDGET_BYTES", 1, kMaxBudgetBytes, fallback);
}
inline std::int64_t wgrad_column_budget_bytes() {
  return env_whole_number("COURSE_CONV_WGRAD_COLUMN_BUDGET_BYTES", 1, kMaxBudgetBytes,
                          kWgradColumnBudgetBytes);
}
inline std::int64_t dgrad_column_budget_bytes() {
  return env_whole_number("COURSE_CONV_DGRAD_COLUMN_BUDGET_BYTES", 1, kMaxBudgetBytes,
                          kDgradColumnBudgetBytes);
}

// How many images of a batch of N one slice takes, when one image has `elements_per_image`
// elements in the largest tensor a slice's kernels touch: as many as stay within
// conv_max_elements(), the whole batch when it does (1 when N == 0). Throws
// std::invalid_argument naming `function` when one image alone is over the limit: slices are
// whole images.
inline int conv_batch_chunk(const char* function, int N, std::int64_t elements_per_image) {
  const std::int64_t limit = conv_max_elements();
  require(elements_per_image <= limit, function,
          "every tensor must have fewer than 2^31 elements (at most " + std::to_string(limit) +
              (limit < std::numeric_limits<int>::max() ? ", COURSE_CONV_MAX_ELEMENTS" : "") +
              ") in one image: a larger batch runs in slices of whole images, but one image "
              "here has " + std::to_string(elements_per_image));
  const std::int64_t images = std::max<std::int64_t>(1, limit / std::max<std::int64_t>(1, elements_per_image));
  return static_cast<int>(std::min<std::int64_t>(std::max(N, 1), images));
}

}  // namespace course
