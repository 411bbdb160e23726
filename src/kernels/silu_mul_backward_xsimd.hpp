// The SiLU*up backward (silu_mul_backward.hpp), written once for every xsimd
// architecture. Include this ONLY from the per-ISA translation units
// (silu_mul_backward_<isa>.cpp); everything is a template on Arch for the
// reason f32_silu_mul_xsimd.hpp gives.
#pragma once

#include <cstddef>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "kernels/f32_silu_mul_xsimd.hpp"
#include "kernels/silu_mul_backward.hpp"

namespace swiglu::detail {

struct SiluMulBackwardKernel {
    template <class Arch>
    static void eval(xsimd::batch<float, Arch> z, xsimd::batch<float, Arch> up,
                     xsimd::batch<float, Arch> dact, xsimd::batch<float, Arch>& dgate,
                     xsimd::batch<float, Arch>& dup, xsimd::batch<float, Arch>& act) noexcept {
        using B = xsimd::batch<float, Arch>;
        const B one(1.0f);
        const B e = SiluMulKernel::exp_nonpositive<Arch>(-xsimd::abs(z));
        const auto neg = z < B(0.0f);
        const B den = one + e;
        const B s = xsimd::select(neg, e, one) / den;
        const B s_complement = xsimd::select(neg, one, e) / den;  // 1 - s
        const B silu = z * s;
        act = silu * up;
        dup = dact * silu;
        dgate = (dact * up) * (s * (one + z * s_complement));
    }

    template <class Arch>
    void operator()(Arch, const float* gate, const float* up, const float* dact, float* dgate,
                    float* dup, float* act, std::size_t n) const noexcept {
        using B = xsimd::batch<float, Arch>;
        constexpr std::size_t width = B::size;
        std::size_t i = 0;
        B g, u, a;
        for (; i + width <= n; i += width) {
            eval<Arch>(B::load_unaligned(gate + i), B::load_unaligned(up + i),
                       B::load_unaligned(dact + i), g, u, a);
            g.store_unaligned(dgate + i);
            u.store_unaligned(dup + i);
            a.store_unaligned(act + i);
        }
        if (i == n) return;
        // Tail: one zero-padded vector through the same code (same numerics
        // for every element, nothing past n read or written).
        const std::size_t rest = n - i, bytes = rest * sizeof(float);
        alignas(64) float zb[width] = {};
        alignas(64) float ub[width] = {};
        alignas(64) float db[width] = {};
        std::memcpy(zb, gate + i, bytes);
        std::memcpy(ub, up + i, bytes);
        std::memcpy(db, dact + i, bytes);
        eval<Arch>(B::load_aligned(zb), B::load_aligned(ub), B::load_aligned(db), g, u, a);
        g.store_aligned(zb);
        u.store_aligned(ub);
        a.store_aligned(db);
        std::memcpy(dgate + i, zb, bytes);
        std::memcpy(dup + i, ub, bytes);
        std::memcpy(act + i, db, bytes);
    }
};

}  // namespace swiglu::detail
