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
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "kernels/act_block.hpp"
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
        // AVX-512's one instruction for it: GCC makes the loop below into it
        // in quantize_row, but inlined into quantize_act_row's loop over
        // blocks it made 16 lane extracts and byte stores.
        if constexpr (std::is_same_v<Arch, xsimd::avx512bw> && sizeof(Out) == 1) {
            if (count == width) {
                _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(bits));
                return;
            }
        }
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

    // The largest of a batch's lanes, all finite and >= 0 (quantize_act_row),
    // halving the lanes each step (a chain of `width` compares took as long
    // as the rest of a block): the same value in any order.
    template <class Arch>
    static float largest_lane(xsimd::batch<float, Arch> v) noexcept {
        if constexpr (std::is_same_v<Arch, xsimd::avx512bw>) {
            return _mm512_reduce_max_ps(v);
        } else {
            constexpr std::size_t width = xsimd::batch<float, Arch>::size;
            alignas(64) float lanes[width];
            v.store_aligned(lanes);
            for (std::size_t half = width / 2; half > 0; half /= 2)
                for (std::size_t j = 0; j < half; ++j)
                    lanes[j] = lanes[j + half] > lanes[j] ? lanes[j + half] : lanes[j];
            return lanes[0];
        }
    }
    template <class Arch>
    static std::int32_t lane_sum(xsimd::batch<std::int32_t, Arch> v) noexcept {
        if constexpr (std::is_same_v<Arch, xsimd::avx512bw>)
            return _mm512_reduce_add_epi32(v);
        else
            return xsimd::hadd(v);
    }

    // One row into the grouped formats' activation blocks
    // (grouped_layout.hpp's contract): each whole block as quantize_row
    // quantises it alone, its sum taken from the registers. quantize_row
    // per block, then a sum over the bytes it had just stored, took 13-18 ns
    // a block against 5 here (AVX-512), and cyber's and glass's q4_0 / q8_0
    // calls 1.15-1.5x as long (docs/measurements.md).
    template <class Arch>
    static void quantize_act_row(Arch, const float* in, std::size_t n, ActBlock* out) noexcept {
        using B = xsimd::batch<float, Arch>;
        using I = xsimd::batch<std::int32_t, Arch>;
        constexpr std::size_t width = B::size;
        constexpr std::size_t vectors = kGgmlBlock / width;
        static_assert(kGgmlBlock % width == 0, "whole vectors per block");
        std::size_t b = 0;
        for (; (b + 1) * kGgmlBlock <= n; ++b) {
            const float* x = in + b * kGgmlBlock;
            ActBlock& block = out[b];
            B v[vectors];
            B peak(0.0f);
            auto finite = B(0.0f) == B(0.0f);
            for (std::size_t j = 0; j < vectors; ++j) {
                v[j] = B::load_unaligned(x + j * width);
                const B a = xsimd::abs(v[j]);
                finite = finite & (a <= B(3.40282347e+38f));
                peak = xsimd::max(peak, a);
            }
            const float top = largest_lane<Arch>(peak);
            if (!xsimd::all(finite) || top == 0.0f) {
                std::memset(block.qs, 0, kGgmlBlock);
                block.d = xsimd::all(finite) ? 0.0f : __builtin_nanf("");
                block.sum = 0;
                continue;
            }
            const B inv(127.0f / top);
            I bits[vectors];
            for (std::size_t j = 0; j < vectors; ++j) bits[j] = int8_bits<Arch>(v[j] * inv);
            for (std::size_t j = 0; j < vectors; ++j)
                store_narrow<Arch>(bits[j], block.qs + j * width, width);
            const I magic(0x4B400000);  // each lane holds it + its quant (int8_bits)
            I sum = bits[0] - magic;
            for (std::size_t j = 1; j < vectors; ++j) sum += bits[j] - magic;
            block.sum = lane_sum<Arch>(sum);
            block.d = top / 127.0f;
        }
        if (b * kGgmlBlock == n) return;
        // The last block, zero-padded.
        const std::size_t count = n - b * kGgmlBlock;
        ActBlock& block = out[b];
        block.d = quantize_row(Arch{}, in + b * kGgmlBlock, block.qs, count);
        std::memset(block.qs + count, 0, kGgmlBlock - count);
        std::int32_t sum = 0;
        for (std::size_t i = 0; i < count; ++i) sum += block.qs[i];
        block.sum = sum;
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
        [](const float* in, std::size_t n, ActBlock* out) noexcept {
            ConvertKernel::quantize_act_row(Arch{}, in, n, out);
        },
    };
}

}  // namespace swiglu::detail
