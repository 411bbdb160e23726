// The SwiGLU activation's backward, fused: from gate, up and dact = dL/dact
// (for act = SiLU(gate) * up), per element
//
//   s     = sigmoid(gate)
//   dgate = dact * up * s * (1 + gate * (1 - s))
//   dup   = dact * SiLU(gate)           (SiLU(gate) = gate * s)
//   act   = SiLU(gate) * up             (what the weight gradient of down needs)
//
// Numerics (every ISA and the scalar reference use the same formula):
//   e = exp(-|gate|) (the forward's exp, f32_silu_mul_xsimd.hpp; 0 below
//   -87.3), den = 1 + e; s = (gate >= 0 ? 1 : e) / den and 1 - s = (gate >= 0
//   ? e : 1) / den, each one rounding: 1 - s is never formed by a
//   subtraction, so dgate keeps full relative accuracy where s is close to 1.
//   act and dup are the forward's operations, (gate * s) * up and dact *
//   (gate * s), so act has the forward's bits for |gate| <= 60.625.
//   Accuracy: act and dup within 6 ulp (about 4e-7 relative): s and 1 - s
//   2 ulp (exp 0.65, the division 0.5, den 0.5), then at most two
//   multiplies; dgate within 6 ulp of |dact up s| (1 + |gate (1 - s)|),
//   relative except near gate = -1.2785, where SiLU' = s (1 + gate (1 - s))
//   crosses 0 and the sum cancels (as in any evaluation of this formula).
//   Below gate = -87.3, s is taken as 0 (the forward's shift that keeps
//   relative accuracy further out is not worth it here): every output is 0
//   where the true value is below 1.1e-36 (1 + |dact|) (1 + |up|).
//   Special values follow the formulas in IEEE arithmetic, as PyTorch's
//   silu backward does: gate = +inf gives dgate = NaN (inf * 0), gate = -inf
//   NaN everywhere (SiLU(-inf) = -inf * 0), NaN propagates.
//
// Any n; pointers need not be aligned. The outputs must not overlap the
// inputs or each other (a backward's buffers are separate).
#pragma once

#include <cstddef>

namespace swiglu::detail {

// Runs this CPU's kernel (kernel_table.hpp: kernels().silu_mul_backward).
void silu_mul_backward(const float* gate, const float* up, const float* dact, float* dgate,
                       float* dup, float* act, std::size_t n) noexcept;

// The scalar reference and the per-ISA kernels, each in its own translation
// unit compiled with only that ISA's flags (silu_mul_backward_<isa>.cpp).
void silu_mul_backward_scalar(const float* gate, const float* up, const float* dact, float* dgate,
                              float* dup, float* act, std::size_t n) noexcept;
void silu_mul_backward_sse2(const float* gate, const float* up, const float* dact, float* dgate,
                            float* dup, float* act, std::size_t n) noexcept;
void silu_mul_backward_avx2_fma(const float* gate, const float* up, const float* dact, float* dgate,
                                float* dup, float* act, std::size_t n) noexcept;
void silu_mul_backward_avx512(const float* gate, const float* up, const float* dact, float* dgate,
                              float* dup, float* act, std::size_t n) noexcept;

}  // namespace swiglu::detail
