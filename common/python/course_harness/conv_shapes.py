"""The convolution family's shapes, for the Python tests and benchmarks (m3.03 to m3.07):
the twins of course::conv_test_cases() and course::conv_resnet_layers() in
common/include/course/conv_reference.h. Keep them in step with that file, so that the Python
and C++ rows and tests line up. This module imports nothing (not even torch).

    from course_harness.conv_shapes import RESNET_LAYERS, TEST_CASES
    for layer in RESNET_LAYERS: layer.name, layer.n, layer.c, ...
"""
from collections import namedtuple

# One convolution: batch, channels, image height and width, filters, filter height and width,
# and the per-axis stride, padding and dilation (height, width).
ConvCase = namedtuple("ConvCase", "name n c h w k r s stride padding dilation")


def case(name, n, c, h, w, k, r, s, stride=1, padding=0, dilation=1):
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    return ConvCase(name, n, c, h, w, k, r, s, pair(stride), pair(padding), pair(dilation))


# course::conv_test_cases(): odd sizes, 1x1 to 7x7 filters, stride 2, dilation 2, padding
# larger than the filter's radius, one-row and one-column outputs, C = 1, K = 1, R != S.
TEST_CASES = [
    case("N1_1x1", 1, 8, 9, 11, 5, 1, 1, 1, 0),
    case("OddImage_3x3", 2, 5, 13, 7, 6, 3, 3, 1, 1),
    case("Filter5x5", 2, 3, 17, 19, 4, 5, 5, 1, 2),
    case("Filter7x7Stride2", 2, 3, 23, 21, 8, 7, 7, 2, 3),
    case("Stride2", 3, 6, 15, 16, 7, 3, 3, 2, 1),
    case("Dilation2", 2, 4, 14, 15, 5, 3, 3, 1, 2, 2),
    case("PadLargerThanRadius", 1, 3, 6, 5, 4, 3, 3, 1, 3),
    case("OutputOneRow", 2, 4, 3, 12, 5, 3, 3, 1, 0),
    case("OutputOneColumn", 2, 4, 12, 3, 5, 3, 3, 1, 0),
    case("OneChannel", 4, 1, 10, 10, 6, 3, 3, 1, 1),
    case("OneFilter", 3, 7, 9, 9, 1, 3, 3, 1, 1),
    case("NonSquare", 2, 5, 12, 17, 6, 3, 5, stride=(1, 2), padding=(1, 2), dilation=(2, 1)),
]

# course::conv_resnet_layers(): the layers the benchmarks time, NCHW, H = W, R = S.
RESNET_LAYERS = [
    case("ResNet_C64_56_K64_3x3", 32, 64, 56, 56, 64, 3, 3, 1, 1),
    case("ResNet_C128_28_K128_3x3", 32, 128, 28, 28, 128, 3, 3, 1, 1),
    case("ResNet_C256_14_K256_3x3", 32, 256, 14, 14, 256, 3, 3, 1, 1),
    case("ResNet_C512_7_K512_3x3", 64, 512, 7, 7, 512, 3, 3, 1, 1),
    case("ResNet_C64_56_K256_1x1", 32, 64, 56, 56, 256, 1, 1, 1, 0),
    case("ResNet_Stem_C3_224_K64_7x7", 32, 3, 224, 224, 64, 7, 7, 2, 3),
]


def output_size(layer):
    """(P, Q): the output's height and width, as course::ConvShape::P() and Q() compute them."""
    def one(size, filter_size, stride, padding, dilation):
        span = size + 2 * padding - dilation * (filter_size - 1) - 1
        return 0 if span < 0 else span // stride + 1
    return (one(layer.h, layer.r, layer.stride[0], layer.padding[0], layer.dilation[0]),
            one(layer.w, layer.s, layer.stride[1], layer.padding[1], layer.dilation[1]))
