// The reference bf16 one-row kernel (bf16_gemv.hpp): the numerics written
// out, one column at a time.
#include <cmath>

#include "common/half.hpp"
#include "kernels/bf16_gemv.hpp"

namespace swiglu::detail {

namespace {

void gemv(const std::uint16_t* tile, std::int64_t k, std::int64_t n, const std::uint16_t* x,
          std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy) noexcept {
    const std::int64_t kb = bf16_padded_k(k) / kBf16Inputs;
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < n; ++c) {
            float s[kBf16Segments];
            for (int j = 0; j < kBf16Segments; ++j) {
                s[j] = 0.0f;
                const std::int64_t i0 = bf16_segment_begin(kb, j) * kBf16Inputs;
                const std::int64_t i1 = bf16_segment_begin(kb, j + 1) * kBf16Inputs;
                for (std::int64_t i = i0; i < i1 && i < k; ++i)
                    s[j] = std::fma(bf16_to_f32(tile[bf16_tile_offset(k, i, c)]),
                                    bf16_to_f32(x[r * ldx + i]), s[j]);
            }
            y[r * ldy + c] = ((s[0] + s[1]) + s[2]) + s[3];
        }
}

}  // namespace

Bf16Gemv bf16_gemv_scalar() noexcept { return &gemv; }

}  // namespace swiglu::detail
