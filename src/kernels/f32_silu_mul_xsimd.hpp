// The SIMD SiLU*up kernel, written once for every xsimd architecture.
//
// Include this ONLY from the per-ISA translation units (silu_mul_<isa>.cpp),
// each compiled with its own -m flags. Everything here is a template on Arch
// on purpose: an inline non-template function (or a template that doesn't
// depend on Arch) would be emitted as a weak symbol by every per-ISA TU, each
// copy compiled for a different ISA, and the linker keeps an arbitrary one;
// the SSE2 path could then end up running the AVX-512 copy. So no helper
// from the standard library that compiles to code of its own either (no
// std::min, std::exp, ...), only builtins such as memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "kernels/f32_silu_mul.hpp"

namespace swiglu::detail {

struct SiluMulKernel {
    // exp(x) for -87.3 <= x <= 0 (where exp(x) is a normal float), within
    // 0.65 ulp (0.68 without FMA; measured over every float in [-87.3, 0]);
    // NaN stays NaN; exp_nonpositive below extends it to every x <= 0.
    // Not xsimd::exp: xsimd 8.1's
    // float exp is off by up to 1.52 ulp (measured over every float in
    // [-87, 0]), which takes SiLU(z) * up past the 3e-7 bound (3.2e-7 at
    // z = -5.884, up = 1.92). This one keeps the rounding errors of the
    // argument reduction and of the final 1 + r, so only the last addition
    // rounds at full weight.
    // (Relies on IEEE arithmetic as written: no -ffast-math.)
    template <class Arch>
    static xsimd::batch<float, Arch> exp_in_range(xsimd::batch<float, Arch> x) noexcept {
        using B = xsimd::batch<float, Arch>;
        using I = xsimd::batch<std::int32_t, Arch>;
        // k = round(x / ln2): adding 1.5 * 2^23 rounds to an integer and leaves
        // k in the low bits of the significand.
        const B magic(0x1.8p23f);
        const B t = xsimd::fma(x, B(0x1.715476p+0f), magic);
        const B k = t - magic;
        // r = x - k * ln2 (Cody-Waite): ln2_hi has 9 significant bits, so
        // k * ln2_hi (|k| <= 126) and r_hi are exact; r_lo is what rounding r lost.
        const B r_hi = xsimd::fnma(k, B(0x1.63p-1f), x);
        const B r = xsimd::fnma(k, B(-0x1.bd0106p-13f), r_hi);
        const B r_lo = xsimd::fnma(k, B(-0x1.bd0106p-13f), r_hi - r);
        // exp(r) = 1 + r + r^2 q(r), q a degree-5 Chebyshev fit of
        // (e^r - 1 - r) / r^2 on |r| <= 0.3466 (relative error 7e-10 with these
        // float coefficients).
        const B r2 = r * r;
        B q = B(0x1.a124eep-13f);
        q = xsimd::fma(q, r, B(0x1.6d4320p-10f));
        q = xsimd::fma(q, r, B(0x1.1110e0p-7f));
        q = xsimd::fma(q, r, B(0x1.5554eap-5f));
        q = xsimd::fma(q, r, B(0x1.555556p-3f));
        q = xsimd::fma(q, r, B(0.5f));
        const B one(1.0f);
        const B hi = one + r;
        const B hi_err = r - (hi - one);  // exact (Fast2Sum, |1| >= |r|)
        const B p = hi + xsimd::fma(r2, q, r_lo + hi_err);
        // 2^k from k's bits: (k + 127) << 23; k >= -126 wherever it is used.
        const B scale =
            xsimd::bitwise_cast<B>((xsimd::bitwise_cast<I>(t) - I(0x4b400000 - 127)) << 23);
        return p * scale;
    }

    // exp(x) for every x <= 0: 0 below -87.3 and for -inf; NaN stays NaN.
    template <class Arch>
    static xsimd::batch<float, Arch> exp_nonpositive(xsimd::batch<float, Arch> x) noexcept {
        using B = xsimd::batch<float, Arch>;
        return xsimd::select(x < B(-87.3f), B(0.0f), exp_in_range<Arch>(x));
    }

    // One vector of out = SiLU(z) * up; the formula and its numerics are
    // described in silu_mul.hpp. Real gates almost never reach |z| > S, so a
    // vector without such a lane takes a shorter path (no shift, no
    // underflow): for those lanes it computes exactly the operations of the
    // full path, so the bits don't depend on which path a vector took.
    template <class Arch>
    static xsimd::batch<float, Arch> eval(xsimd::batch<float, Arch> z,
                                          xsimd::batch<float, Arch> up) noexcept {
        using B = xsimd::batch<float, Arch>;
        const B a = xsimd::abs(z);
        // NaN compares false: NaN lanes stay on the short path, where z * ...
        // keeps them NaN; +-inf is far.
        if (xsimd::any(a > B(kSiluShift))) return eval_far<Arch>(z, up);
        const B one(1.0f);
        const B e = exp_in_range<Arch>(-a);
        const B num = xsimd::select(z < B(0.0f), e, one);
        return (z * (num / (one + e))) * up;
    }

    // The full formula, for vectors with a lane beyond |z| > S.
    template <class Arch>
    static xsimd::batch<float, Arch> eval_far(xsimd::batch<float, Arch> z,
                                              xsimd::batch<float, Arch> up) noexcept {
        using B = xsimd::batch<float, Arch>;
        const B one(1.0f);
        const B shift(kSiluShift);
        const B a = xsimd::abs(z);
        // Far from 0 the exp argument is shifted by S (exactly), so exp never
        // reaches the range where it would flush to 0 while the result matters.
        const auto far = a > shift;
        const B e = exp_nonpositive<Arch>(xsimd::select(far, shift - a, -a));
        const auto neg = z < B(0.0f);
        const B num = xsimd::select(neg, e, one);
        // For |z| > S the true e is < 5e-27, so 1 + e is exactly 1 in float.
        const B den = xsimd::select(far, one, one + e);
        // Negative and far: e above is exp(-|z|) * exp(S); put exp(-S) on up.
        const B up_scaled = xsimd::select(far && neg, up * B(kSiluShiftScale), up);
        // NaN z: far and neg are false and z * anything stays NaN.
        return (z * (num / den)) * up_scaled;
    }

    template <class Arch>
    void operator()(Arch, const float* gate, const float* up, float* out,
                    std::size_t n) const noexcept {
        using B = xsimd::batch<float, Arch>;
        constexpr std::size_t width = B::size;
        std::size_t i = 0;
        // Each vector is fully loaded before it is stored, so out == gate or
        // out == up (exact aliasing) is fine.
        for (; i + width <= n; i += width) {
            const B z = B::load_unaligned(gate + i);
            const B u = B::load_unaligned(up + i);
            eval<Arch>(z, u).store_unaligned(out + i);
        }
        if (i == n) return;
        // Tail: one zero-padded vector through the same code, so the last
        // elements get exactly the numerics (and ISA) of the others and nothing
        // past n is read or written.
        const std::size_t rest = n - i;
        alignas(64) float zb[width] = {};
        alignas(64) float ub[width] = {};
        std::memcpy(zb, gate + i, rest * sizeof(float));
        std::memcpy(ub, up + i, rest * sizeof(float));
        eval<Arch>(B::load_aligned(zb), B::load_aligned(ub)).store_aligned(zb);
        std::memcpy(out + i, zb, rest * sizeof(float));
    }
};

}  // namespace swiglu::detail
