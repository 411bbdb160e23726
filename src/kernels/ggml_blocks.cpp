// The scalar reference of GGUF's Q8_0 and Q4_0 (ggml_blocks.hpp). Compiled
// with -ffp-contract=off: x * id + 8.5f must round twice, as in ggml.
#include "kernels/ggml_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.hpp"
#include "kernels/padded_block.hpp"

namespace swiglu::detail {

namespace {

constexpr std::uint16_t kF16Nan = 0x7E00;

// (int8_t)v for v in range, as ggml casts; saturated (NaN: 0) outside it,
// where ggml's cast is undefined: a block of tiny values whose 1 / d
// overflows to inf gives x * id = +-inf (or 0 * inf = NaN) there.
std::int8_t to_int8(float v) {
    if (!(v == v)) return 0;
    return static_cast<std::int8_t>(std::clamp(v, -128.0f, 127.0f));
}

}  // namespace

void quantize_row_q8_0(const float* x, std::size_t n, BlockQ8_0* out) noexcept {
    for (std::size_t b = 0; b < ggml_blocks(n); ++b) {
        float v[kGgmlBlock];
        BlockQ8_0& block = out[b];
        if (!load_padded_block(x, n, b, v)) {
            block.d = kF16Nan;
            std::memset(block.qs, 0, sizeof(block.qs));
            continue;
        }
        float amax = 0.0f;
        for (float a : v) amax = std::max(amax, std::fabs(a));
        const float d = amax / ((1 << 7) - 1);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        block.d = f32_to_f16(d);
        for (std::size_t j = 0; j < kGgmlBlock; ++j) block.qs[j] = to_int8(std::roundf(v[j] * id));
    }
}

void quantize_row_q4_0(const float* x, std::size_t n, BlockQ4_0* out) noexcept {
    constexpr std::size_t half = kGgmlBlock / 2;
    for (std::size_t b = 0; b < ggml_blocks(n); ++b) {
        float v[kGgmlBlock];
        BlockQ4_0& block = out[b];
        if (!load_padded_block(x, n, b, v)) {
            block.d = kF16Nan;
            std::memset(block.qs, 0x88, sizeof(block.qs));  // q = 8: value 0 * NaN
            continue;
        }
        // The signed value of largest magnitude, the first one on ties: its
        // q is exactly 0 (-8 * d), the other end gets the rounding slack.
        float amax = 0.0f, max = 0.0f;
        for (float a : v)
            if (amax < std::fabs(a)) {
                amax = std::fabs(a);
                max = a;
            }
        const float d = max / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        block.d = f32_to_f16(d);
        for (std::size_t j = 0; j < half; ++j) {
            const float x0 = v[j] * id;
            const float x1 = v[half + j] * id;
            // x * id lies in [-8, 8]: + 8.5 then truncation rounds to 0 .. 16.
            const auto q0 = static_cast<std::uint8_t>(std::clamp<int>(to_int8(x0 + 8.5f), 0, 15));
            const auto q1 = static_cast<std::uint8_t>(std::clamp<int>(to_int8(x1 + 8.5f), 0, 15));
            block.qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
        }
    }
}

void dequantize_row_q8_0(const BlockQ8_0* blocks, std::size_t n, float* out) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        const BlockQ8_0& block = blocks[i / kGgmlBlock];
        out[i] = static_cast<float>(block.qs[i % kGgmlBlock]) * f16_to_f32(block.d);
    }
}

void dequantize_row_q4_0(const BlockQ4_0* blocks, std::size_t n, float* out) noexcept {
    constexpr std::size_t half = kGgmlBlock / 2;
    for (std::size_t i = 0; i < n; ++i) {
        const BlockQ4_0& block = blocks[i / kGgmlBlock];
        const std::size_t j = i % kGgmlBlock;
        const int q = j < half ? block.qs[j] & 0x0F : block.qs[j - half] >> 4;
        out[i] = static_cast<float>(q - 8) * f16_to_f32(block.d);
    }
}

}  // namespace swiglu::detail
