// The scalar references of the conversions (convert.hpp) and the scalar
// kernel table. The SIMD tables (convert_<isa>.cpp) give these bits exactly.
#include "kernels/convert.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/act_block.hpp"
#include "kernels/f32_silu_mul.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/silu_mul_backward.hpp"

namespace swiglu::detail {

namespace {
// Round to nearest even for |v| <= 2^22, without a libm call per element
// (std::nearbyint is one on baseline x86-64, ~5 ns; this vectorises): adding
// 1.5 * 2^23 leaves no fraction bits, so the FPU's own rounding does it.
// Needs the default rounding mode and no -ffast-math (which would fold it).
inline float round_even(float v) {
    constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
    return (v + kMagic) - kMagic;
}

// The scalar reference of each array conversion; the SIMD kernels
// (kernels/convert_xsimd.hpp) reproduce these bits exactly.
void to_bf16_scalar(const float* in, std::uint16_t* out, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t u;
        std::memcpy(&u, &in[i], 4);
        // NaN: keep it a (quiet) NaN; the rounding add could carry it to inf.
        if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
            out[i] = static_cast<std::uint16_t>((u >> 16) | 0x40);
            continue;
        }
        u += 0x7FFFu + ((u >> 16) & 1u);
        out[i] = static_cast<std::uint16_t>(u >> 16);
    }
}

float round_to_bf16_one(float v) noexcept {
    std::uint16_t h;
    to_bf16_scalar(&v, &h, 1);
    const std::uint32_t u = std::uint32_t{h} << 16;
    float r;
    std::memcpy(&r, &u, 4);
    return r;
}

void round_to_bf16_scalar(const float* in, float* out, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) out[i] = round_to_bf16_one(in[i]);
}

float quantize_row_scalar(const float* in, std::int8_t* out, std::size_t n) noexcept {
    float peak = 0.0f;
    bool finite = true;
    for (std::size_t i = 0; i < n; ++i) {
        const float a = std::fabs(in[i]);
        finite = finite && std::isfinite(a);  // NaN and inf both fail
        peak = a > peak ? a : peak;
    }
    if (!finite || peak == 0.0f) {
        std::memset(out, 0, n);
        return finite ? 0.0f : NAN;
    }
    const float inv = 127.0f / peak;
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int8_t>(round_even(in[i] * inv));
    return peak / 127.0f;
}

void dequantize_scalar(const float* acc, float* out, std::size_t n, float row_scale,
                       const float* column_scales) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        std::int32_t a;  // the bits, read through memcpy: no aliased pointer
        std::memcpy(&a, acc + i, sizeof(a));
        out[i] = static_cast<float>(a) * (row_scale * column_scales[i]);
    }
}

// Each block as quantize_row quantises it alone, then the sum of its quants.
void quantize_act_row_scalar(const float* in, std::size_t n, ActBlock* out) noexcept {
    for (std::size_t b = 0; b * kGgmlBlock < n; ++b) {
        const std::size_t count = std::min(kGgmlBlock, n - b * kGgmlBlock);
        ActBlock& block = out[b];
        block.d = quantize_row_scalar(in + b * kGgmlBlock, block.qs, count);
        std::memset(block.qs + count, 0, kGgmlBlock - count);
        std::int32_t sum = 0;
        for (const std::int8_t q : block.qs) sum += q;
        block.sum = sum;
    }
}

}  // namespace

// The scalar table: the portable reference every SIMD table reproduces.
KernelTable kernel_table_scalar() noexcept {
    return {&f32_silu_mul_scalar,    &silu_mul_backward_scalar, &to_bf16_scalar,
            &round_to_bf16_scalar,   &quantize_row_scalar,      &dequantize_scalar,
            &quantize_act_row_scalar};
}

float round_to_bf16(float v) noexcept { return round_to_bf16_one(v); }

// Load time only (one pass per weight column), so scalar.
float quantize_column(const float* w, std::size_t k, std::ptrdiff_t stride, std::int8_t* out,
                      std::ptrdiff_t out_stride) noexcept {
    float peak = 0.0f;
    bool finite = true;
    for (std::size_t r = 0; r < k; ++r) {
        const float a = std::fabs(w[static_cast<std::ptrdiff_t>(r) * stride]);
        finite = finite && std::isfinite(a);
        peak = a > peak ? a : peak;
    }
    const float inv = finite && peak > 0.0f ? 127.0f / peak : 0.0f;
    for (std::size_t r = 0; r < k; ++r)
        out[static_cast<std::ptrdiff_t>(r) * out_stride] = static_cast<std::int8_t>(
            round_even(inv == 0.0f ? 0.0f : w[static_cast<std::ptrdiff_t>(r) * stride] * inv));
    return finite ? peak / 127.0f : NAN;
}

}  // namespace swiglu::detail
