// Conversions between the block's f32 activations and the reduced-precision
// formats its matmuls read: bf16, and s8 with one scale per row (token).
#pragma once

#include <cstddef>
#include <cstdint>

namespace swiglu::detail {

// f32 -> bf16, round to nearest even; NaN stays NaN, +-inf stays +-inf.
void to_bf16(const float* in, std::uint16_t* out, std::size_t n) noexcept;
// bf16 -> f32 rounding: the value bf16 would store, as f32.
float round_to_bf16(float v) noexcept;

// Symmetric per-row quantisation: scale = max|in| / 127, out = round(in /
// scale) in [-127, 127]; returns the scale. An all-zero row gets scale 0
// (out = 0). A row holding NaN or +-inf gets a NaN scale (out = 0): every
// output of that token then becomes NaN, as in f32 arithmetic.
float quantize_row(const float* in, std::int8_t* out, std::size_t n) noexcept;

// The same for one weight column (one output channel): k values `stride`
// apart, written to `out` `out_stride` apart; returns the column's scale (NaN
// when the column holds NaN or +-inf: that channel's outputs become NaN).
float quantize_column(const float* w, std::size_t k, std::ptrdiff_t stride, std::int8_t* out,
                      std::ptrdiff_t out_stride) noexcept;

}  // namespace swiglu::detail
