// The reference panel kernels: bf16_panels.hpp's numerics, one element at a
// time (std::fma in input order). Built with -ffp-contract=off.
#include <cmath>

#include "common/half.hpp"
#include "kernels/bf16_panels.hpp"

namespace swiglu::detail {

namespace {

void gemm(const std::uint16_t* tile, std::int64_t k, std::int64_t n, const float* x,
          std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t c = 0; c < n; ++c) {
            const std::uint16_t* w =
                tile + (c / kPanelColumns) * k * kPanelColumns + c % kPanelColumns;
            float acc = 0.0f;
            for (std::int64_t i = 0; i < k; ++i)
                acc = std::fma(x[m * ldx + i], bf16_to_f32(w[i * kPanelColumns]), acc);
            y[m * ldy + c] = acc;
        }
}

void unpack(const std::uint16_t* tile, std::int64_t k, std::int64_t n, float* out) noexcept {
    for (std::int64_t i = 0; i < k; ++i)
        for (std::int64_t c = 0; c < n; ++c)
            out[i * n + c] = bf16_to_f32(
                tile[((c / kPanelColumns) * k + i) * kPanelColumns + c % kPanelColumns]);
}

}  // namespace

Bf16PanelKernels bf16_panel_kernels_scalar() noexcept { return {&gemm, &unpack}; }

}  // namespace swiglu::detail
