// Portable scalar version of the SIMD kernel's formula (silu_mul.hpp), for
// CPUs without a SIMD path and as the benchmarks' baseline. Compiled with the
// baseline flags like the rest of the library.
#include <cmath>
#include <cstddef>

#include "kernels/f32_silu_mul.hpp"

namespace swiglu::detail {

namespace {

float silu_times(float z, float up) noexcept {
    const float a = std::fabs(z);
    const bool far = a > kSiluShift;  // false for NaN, like the SIMD compare
    const float e = std::exp(far ? kSiluShift - a : -a);
    const bool neg = z < 0.0f;
    const float num = neg ? e : 1.0f;
    const float den = far ? 1.0f : 1.0f + e;
    const float up_scaled = (far && neg) ? up * kSiluShiftScale : up;
    return (z * (num / den)) * up_scaled;
}

}  // namespace

void f32_silu_mul_scalar(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) out[i] = silu_times(gate[i], up[i]);
}

}  // namespace swiglu::detail
