// The scalar reference of the SiLU*up backward (silu_mul_backward.hpp): the
// kernels' formula one element at a time, glibc's expf for their exp.
#include <cmath>

#include "kernels/silu_mul_backward.hpp"

namespace swiglu::detail {

void silu_mul_backward_scalar(const float* gate, const float* up, const float* dact, float* dgate,
                              float* dup, float* act, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        const float z = gate[i];
        const float a = std::fabs(z);
        const float e = a > 87.3f ? 0.0f : std::exp(-a);  // NaN stays NaN
        const bool neg = z < 0.0f;
        const float den = 1.0f + e;
        const float s = (neg ? e : 1.0f) / den;
        const float s_complement = (neg ? 1.0f : e) / den;
        const float silu = z * s;
        act[i] = silu * up[i];
        dup[i] = dact[i] * silu;
        dgate[i] = (dact[i] * up[i]) * (s * (1.0f + z * s_complement));
    }
}

}  // namespace swiglu::detail
