// The reference weight-gradient kernel: gradient_gemm.hpp's numerics, one
// element at a time (std::fma in token order). Built with -ffp-contract=off.
#include <cmath>

#include "kernels/gradient_gemm.hpp"

namespace swiglu::detail {

namespace {

void gemm(const float* strips, const float* panels, std::int64_t k, std::int64_t rows,
          std::int64_t cols, float* w, std::int64_t ldw, bool add) noexcept {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) {
            const float* s =
                strips + (r / kGradientStrip) * k * kGradientStrip + r % kGradientStrip;
            const float* b = panels + (c / kPanelColumns) * k * kPanelColumns + c % kPanelColumns;
            float sum = 0.0f;
            for (std::int64_t t = 0; t < k; ++t)
                sum = std::fma(s[t * kGradientStrip], b[t * kPanelColumns], sum);
            w[r * ldw + c] = add ? w[r * ldw + c] + sum : sum;
        }
}

}  // namespace

GradientGemm gradient_gemm_scalar() noexcept { return &gemm; }

}  // namespace swiglu::detail
