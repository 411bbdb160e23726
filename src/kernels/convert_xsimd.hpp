// The SIMD conversions around the matmuls (f32 -> bf16, f32 -> s8 per row,
// s32 -> f32 with scales), written once for every xsimd architecture. Each
// gives bit for bit the result of its scalar twin in convert_scalar.cpp: the same
// integer operations for bf16, the same single-rounding float multiplies
// for the scales, so which ISA runs never changes a result.
//
// Include this ONLY from the per-ISA translation units (convert_<isa>.cpp),
// each compiled with its own -m flags. As in f32_silu_mul_xsimd.hpp, everything
// here is a template on Arch (no non-template inline code, no standard
// library helper that compiles to code of its own): a non-template inline
// function would be emitted by every per-ISA TU, each copy compiled for a
// different ISA, and the linker would keep an arbitrary one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "kernels/convert.hpp"
#include "kernels/f32_silu_mul.hpp"
#include "kernels/kernel_table.hpp"

namespace swiglu::detail {

struct ConvertKernel {
    // bf16 bits of each lane, in the low 16 bits of an int32 lane: round to
    // nearest even by adding 0x7FFF + the kept LSB; NaN keeps its top bits and
    // is made quiet (the rounding add could carry a NaN to inf).
    template <class Arch>
    static xsimd::batch<std::int32_t, Arch> bf16_bits(xsimd::batch<float, Arch> v) noexcept {
        using I = xsimd::batch<std::int32_t, Arch>;
        const I u = xsimd::bitwise_cast<I>(v);
        // Masked to 31 bits, so a signed compare orders the magnitudes.
        const auto nan = (u & I(0x7FFFFFFF)) > I(0x7F800000);
        // No lane overflows: the largest finite |v| gives 0x7F807FFF.
        const I rounded = (u + I(0x7FFF) + ((u >> 16) & I(1))) >> 16;
        return xsimd::select(nan, (u >> 16) | I(0x40), rounded);
    }

    // int8 bits of round_even(v) in the low byte of an int32 lane, for
    // |v| <= 127: adding 1.5 * 2^23 rounds v to an integer k (the FPU's round
    // to nearest even) and leaves 0x4B400000 + k in the lane's bits, whose low
    // byte is k mod 256, i.e. k as int8.
    template <class Arch>
    static xsimd::batch<std::int32_t, Arch> int8_bits(xsimd::batch<float, Arch> v) noexcept {
        using B = xsimd::batch<float, Arch>;
        return xsimd::bitwise_cast<xsimd::batch<std::int32_t, Arch>>(v + B(12582912.0f));
    }

    // Stores the low 16 (or 8) bits of each lane; the fixed-length loop
    // compiles to the ISA's narrowing instructions.
    template <class Arch, class Out>
    static void store_narrow(xsimd::batch<std::int32_t, Arch> bits, Out* out,
                             std::size_t count) noexcept {
        constexpr std::size_t width = xsimd::batch<std::int32_t, Arch>::size;
        alignas(64) std::int32_t lanes[width];
        bits.store_aligned(lanes);
        if (count == width) {
            for (std::size_t j = 0; j < width; ++j) out[j] = static_cast<Out>(lanes[j]);
        } else {
            for (std::size_t j = 0; j < count; ++j) out[j] = static_cast<Out>(lanes[j]);
        }
    }

    // Up to one vector of floats from `in` (count < width: zero-padded), so
    // tails run through the same code as full vectors.
    template <class Arch>
    static xsimd::batch<float, Arch> load_partial(const float* in, std::size_t count) noexcept {
        using B = xsimd::batch<float, Arch>;
        if (count == B::size) return B::load_unaligned(in);
        alignas(64) float lanes[B::size] = {};
        std::memcpy(lanes, in, count * sizeof(float));
        return B::load_aligned(lanes);
    }

    template <class Arch>
    static void to_bf16(Arch, const float* in, std::uint16_t* out, std::size_t n) noexcept {
        constexpr std::size_t width = xsimd::batch<float, Arch>::size;
        for (std::size_t i = 0; i < n; i += width) {
            const std::size_t count = n - i < width ? n - i : width;
            store_narrow<Arch>(bf16_bits<Arch>(load_partial<Arch>(in + i, count)), out + i, count);
        }
    }

    // f32 -> the f32 value bf16 stores (the bits shifted back up).
    template <class Arch>
    static void round_to_bf16(Arch, const float* in, float* out, std::size_t n) noexcept {
        using B = xsimd::batch<float, Arch>;
        constexpr std::size_t width = B::size;
        for (std::size_t i = 0; i < n; i += width) {
            const std::size_t count = n - i < width ? n - i : width;
            const B r =
                xsimd::bitwise_cast<B>(bf16_bits<Arch>(load_partial<Arch>(in + i, count)) << 16);
            if (count == width) {
                r.store_unaligned(out + i);
            } else {
                alignas(64) float lanes[width];
                r.store_aligned(lanes);
                std::memcpy(out + i, lanes, count * sizeof(float));
            }
        }
    }

    // Symmetric per-row quantisation; the contract is quantize_row's in
    // convert.hpp. `finite` tracks |v| <= FLT_MAX, false for NaN and inf.
    template <class Arch>
    static float quantize_row(Arch, const float* in, std::int8_t* out, std::size_t n) noexcept {
        using B = xsimd::batch<float, Arch>;
        constexpr std::size_t width = B::size;
        B peak(0.0f);
        auto finite = B(0.0f) == B(0.0f);
        for (std::size_t i = 0; i < n; i += width) {
            const B a = xsimd::abs(load_partial<Arch>(in + i, n - i < width ? n - i : width));
            finite = finite & (a <= B(3.40282347e+38f));
            peak = xsimd::max(peak, a);
        }
        alignas(64) float lanes[width];
        peak.store_aligned(lanes);
        float top = 0.0f;
        for (std::size_t j = 0; j < width; ++j) top = lanes[j] > top ? lanes[j] : top;
        if (!xsimd::all(finite) || top == 0.0f) {
            std::memset(out, 0, n);
            return xsimd::all(finite) ? 0.0f : __builtin_nanf("");
        }
        const B inv(127.0f / top);
        for (std::size_t i = 0; i < n; i += width) {
            const std::size_t count = n - i < width ? n - i : width;
            store_narrow<Arch>(int8_bits<Arch>(load_partial<Arch>(in + i, count) * inv), out + i,
                               count);
        }
        return top / 127.0f;
    }

    // int8 matmul output: s32 accumulators (read as int32 bits from `acc`) to
    // f32, times row_scale * column_scales[i]; acc may be out (in place).
    template <class Arch>
    static void dequantize(Arch, const float* acc, float* out, std::size_t n, float row_scale,
                           const float* column_scales) noexcept {
        using B = xsimd::batch<float, Arch>;
        using I = xsimd::batch<std::int32_t, Arch>;
        constexpr std::size_t width = B::size;
        std::size_t i = 0;
        for (; i + width <= n; i += width) {
            const I a = xsimd::bitwise_cast<I>(B::load_unaligned(acc + i));
            const B scale = B(row_scale) * B::load_unaligned(column_scales + i);
            (xsimd::to_float(a) * scale).store_unaligned(out + i);
        }
        if (i == n) return;
        const std::size_t rest = n - i;
        alignas(64) float a_lanes[width] = {};
        alignas(64) float s_lanes[width] = {};
        std::memcpy(a_lanes, acc + i, rest * sizeof(float));
        std::memcpy(s_lanes, column_scales + i, rest * sizeof(float));
        const I a = xsimd::bitwise_cast<I>(B::load_aligned(a_lanes));
        (xsimd::to_float(a) * (B(row_scale) * B::load_aligned(s_lanes))).store_aligned(a_lanes);
        std::memcpy(out + i, a_lanes, rest * sizeof(float));
    }
};

// The table of one ISA's kernels (each convert_<isa>.cpp calls this with its
// own Arch and its own SiLU*up kernel).
template <class Arch>
KernelTable make_kernel_table(decltype(KernelTable::silu_mul) silu_mul,
                              decltype(KernelTable::silu_mul_backward) silu_mul_backward) noexcept {
    return {
        silu_mul,
        silu_mul_backward,
        [](const float* in, std::uint16_t* out, std::size_t n) noexcept {
            ConvertKernel::to_bf16(Arch{}, in, out, n);
        },
        [](const float* in, float* out, std::size_t n) noexcept {
            ConvertKernel::round_to_bf16(Arch{}, in, out, n);
        },
        [](const float* in, std::int8_t* out, std::size_t n) noexcept {
            return ConvertKernel::quantize_row(Arch{}, in, out, n);
        },
        [](const float* acc, float* out, std::size_t n, float row_scale,
           const float* column_scales) noexcept {
            ConvertKernel::dequantize(Arch{}, acc, out, n, row_scale, column_scales);
        },
    };
}

}  // namespace swiglu::detail
