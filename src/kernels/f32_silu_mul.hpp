// The fused SwiGLU activation: out[i] = SiLU(gate[i]) * up[i].
//
// Numerics (every ISA and the scalar fallback use the same formula):
//   SiLU(z) = z * sigmoid(z), with a stable sigmoid that only ever takes the
//   exp of a non-positive number, so it can't overflow:
//     e = exp(-|z|);  sigmoid = z >= 0 ? 1 / (1 + e) : e / (1 + e).
//   out = (z * sigmoid) * up. Multiplying z by sigmoid (<= 1) first means the
//   only intermediate that can overflow is the final product.
//
//   exp is the kernels' own (f32_silu_mul_xsimd.hpp; glibc's expf in the scalar
//   version), 0.65 ulp at worst: xsimd 8.1's xsimd::exp is off by up to
//   1.52 ulp, which is too much for the bound below.
//
//   Far negative z: exp(-|z|) leaves the normal float range at |z| ~ 87.3,
//   but z * exp(z) * up is still a normal float further out when |up| is
//   large. So for |z| > S (S = 60.625) the kernels evaluate
//   e' = exp(S - |z|) (S - |z| is exact: Sterbenz, or same-binade spacing),
//   and move the constant exp(-S) onto up: out = (z * e') * (up * exp(-S)).
//   exp(-S) rounds to float with a 0.0034 ulp error (S was picked for that).
//   This keeps full relative accuracy for |z| <= S + 87.3 ~ 148 and
//   |up| >= FLT_MIN / exp(-S) ~ 2.5e-12; further out |SiLU(z)| < 4e-63, and
//   only absolute accuracy is kept.
//
//   Accuracy: <= 3e-7 relative error (about 2.5 ulp: ~1 ulp from exp, 0.5
//   from the division, 0.5 from each of the two multiplies) when the result
//   is a normal float; measured over every float z with |z| <= 200 the worst
//   is 2.24e-7 for up = 1, and 2.8e-7 with up chosen adversarially. Results
//   in the subnormal range have an absolute error of up to 2^-150 (1 + |up|).
//   The ISAs need not agree bit for bit (SSE2 has no FMA, and the compiler
//   may contract a * b + c differently per ISA), but each is deterministic
//   and an element's result doesn't depend on its position or on n.
//
//   Special values follow PyTorch's silu(gate) * up:
//     silu(+inf) = +inf, silu(-inf) = NaN (-inf * 0), NaN propagates,
//     silu(-0) = -0; and then the IEEE product with up (inf * 0 = NaN).
//
// Any n works (SIMD loops finish with a padded partial vector); pointers need
// not be aligned; out may alias gate or up exactly (in place), but must not
// partially overlap them.
#pragma once

#include <cstddef>

#include "kernels/isa.hpp"

namespace swiglu::detail {

// The far-negative shift S and exp(-S) rounded to float (see above). S has
// few significand bits so S - |z| is exact for every |z| > S below 2^20;
// exp(-S) = 4.6870224...e-27 is 0x1.73581c p-88 to within 0.0034 ulp.
inline constexpr float kSiluShift = 60.625f;
inline constexpr float kSiluShiftScale = 0x1.73581cp-88f;

// Runs this CPU's kernel (kernel_table.hpp: kernels().silu_mul).
void silu_mul(const float* gate, const float* up, float* out, std::size_t n) noexcept;

// Name of the ISA the kernels run: "avx512", "avx2_fma", "sse2" or "scalar".
const char* kernels_isa_name() noexcept;

// The scalar reference, and the per-ISA kernels, each defined in its own
// translation unit compiled with only that ISA's flags
// (f32_silu_mul_<isa>.cpp; x86 builds only). Tests and benchmarks reach them
// through kernel_table(isa).
void f32_silu_mul_scalar(const float* gate, const float* up, float* out, std::size_t n) noexcept;
void f32_silu_mul_sse2(const float* gate, const float* up, float* out, std::size_t n) noexcept;
void f32_silu_mul_avx2_fma(const float* gate, const float* up, float* out, std::size_t n) noexcept;
void f32_silu_mul_avx512(const float* gate, const float* up, float* out, std::size_t n) noexcept;

}  // namespace swiglu::detail
