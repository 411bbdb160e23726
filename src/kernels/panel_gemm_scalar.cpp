// The reference panel kernels: panel_gemm.hpp's numerics, one element at a
// time (std::fma in input order, block by block). Built with
// -ffp-contract=off.
#include <cmath>

#include "common/half.hpp"
#include "kernels/panel_gemm.hpp"

namespace swiglu::detail {

namespace {

inline float value(const float* tile, std::int64_t at) { return tile[at]; }
inline float value(const std::uint16_t* tile, std::int64_t at) { return bf16_to_f32(tile[at]); }

// Element (i, c) of a (k x n) tile in panels.
inline std::int64_t at(std::int64_t k, std::int64_t i, std::int64_t c) {
    return ((c / kPanelColumns) * k + i) * kPanelColumns + c % kPanelColumns;
}

template <class T>
void gemm_range(const void* tile_, std::int64_t k, std::int64_t begin, std::int64_t end,
                std::int64_t n, const float* x, std::int64_t ldx, std::int64_t rows, float* y,
                std::int64_t ldy) noexcept {
    const T* tile = static_cast<const T*>(tile_);
    for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t c = 0; c < n; ++c)
            for (std::int64_t i0 = begin; i0 < end; i0 += kPanelBlock) {
                float s = 0.0f;
                for (std::int64_t i = i0; i < end && i < i0 + kPanelBlock; ++i)
                    s = std::fma(x[m * ldx + i], value(tile, at(k, i, c)), s);
                y[m * ldy + c] = i0 == 0 ? s : y[m * ldy + c] + s;
            }
}

template <class T>
void gemm(const void* tile, std::int64_t k, std::int64_t n, const float* x, std::int64_t ldx,
          std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    gemm_range<T>(tile, k, 0, k, n, x, ldx, rows, y, ldy);
}

}  // namespace

PanelKernels panel_kernels_scalar() noexcept {
    return {{&gemm<float>, &gemm_range<float>}, {&gemm<std::uint16_t>, &gemm_range<std::uint16_t>}};
}

}  // namespace swiglu::detail
