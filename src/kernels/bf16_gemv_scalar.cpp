// The reference bf16 one-row kernel (bf16_gemv.hpp): the numerics written
// out, one column at a time.
#include <cmath>

#include "common/half.hpp"
#include "kernels/bf16_gemv.hpp"

namespace swiglu::detail {

namespace {

void gemv(const std::uint16_t* tile, std::int64_t k, std::int64_t n, const std::uint16_t* x,
          std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < n; ++c) {
            float s = 0.0f;
            for (std::int64_t i = 0; i < k; ++i)
                s = std::fma(bf16_to_f32(tile[bf16_tile_offset(k, i, c)]),
                             bf16_to_f32(x[r * ldx + i]), s);
            y[r * ldy + c] = s;
        }
}

}  // namespace

Bf16Gemv bf16_gemv_scalar() noexcept { return &gemv; }

}  // namespace swiglu::detail
