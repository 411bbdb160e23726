// The reference s8 kernel (s8_gemm.hpp): plain integer loops over the tile
// layout, each sum in 64 bits, stored as its s32 (exact while it fits).
#include "kernels/s8_gemm.hpp"

namespace swiglu::detail {

namespace {

void gemm(const std::int8_t* tile, std::int64_t k, std::int64_t n, const std::int8_t* x,
          std::int64_t ldx, std::int64_t rows, std::int32_t* y, std::int64_t ldy) noexcept {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < n; ++c) {
            std::int64_t sum = 0;
            for (std::int64_t i = 0; i < k; ++i)
                sum += std::int64_t{x[r * ldx + i]} * tile[s8_tile_offset(k, i, c)];
            y[r * ldy + c] = static_cast<std::int32_t>(sum);
        }
}

}  // namespace

S8Gemm s8_gemm_scalar() noexcept { return &gemm; }

}  // namespace swiglu::detail
