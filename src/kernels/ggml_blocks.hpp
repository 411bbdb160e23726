// GGUF's grouped weight formats Q8_0 and Q4_0, bit for bit as llama.cpp
// (ggml) stores and quantises them, so a GGUF tensor imports unchanged and
// weights quantised here are the ones llama.cpp would make:
//   blocks of 32 consecutive values along a row (the input dimension);
//   Q8_0: an f16 scale d and 32 s8, value = q * d                 (34 bytes)
//   Q4_0: an f16 scale d and 32 4-bit q in 16 bytes, value = (q - 8) * d;
//         byte j holds element j in its low nibble, j + 16 in its high (18 bytes)
//
// Quantisation follows ggml's reference rounding (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref), with the same float operations in the same order
// (this TU is compiled with -ffp-contract=off):
//   Q8_0: d = amax / 127, id = d ? 1 / d : 0, q = roundf(x * id)  (ties away from 0)
//   Q4_0: m = the value of largest |x| (the first one on ties), d = m / -8,
//         id = d ? 1 / d : 0, q = min(15, (int8)(x * id + 8.5f))  (truncation)
// The scale is rounded to f16 (nearest even) for storage, while the q use
// the f32 d, as in ggml.
//
// Where we differ, and why:
//   - A row whose length is not a multiple of 32 (d = 341) ends in a block
//     padded with zeros: they quantise to 0 and contribute nothing to a dot
//     product. (GGUF itself requires whole blocks.)
//   - A block holding NaN or +-inf (ggml's result is undefined there: it
//     converts NaN to an integer) gets a NaN scale and q = 0 (Q4_0: 8), so
//     every value of that block dequantises to NaN: the non-finite weight
//     propagates, as in f32 arithmetic, instead of being silently dropped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swiglu::detail {

inline constexpr std::size_t kGgmlBlock = 32;

struct BlockQ8_0 {
    std::uint16_t d;  // f16 bits
    std::int8_t qs[kGgmlBlock];
};
struct BlockQ4_0 {
    std::uint16_t d;  // f16 bits
    std::uint8_t qs[kGgmlBlock / 2];
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18, "GGUF block sizes");

// Blocks of one row of n values (the last one padded with zeros).
constexpr std::size_t ggml_blocks(std::size_t n) { return (n + kGgmlBlock - 1) / kGgmlBlock; }

// One row of n values into ggml_blocks(n) blocks.
void quantize_row_q8_0(const float* x, std::size_t n, BlockQ8_0* out) noexcept;
void quantize_row_q4_0(const float* x, std::size_t n, BlockQ4_0* out) noexcept;

// The n values of one row back, exactly q * d (Q8_0) or (q - 8) * d (Q4_0)
// in f32 (both factors are exact in f32, and so is their product).
void dequantize_row_q8_0(const BlockQ8_0* blocks, std::size_t n, float* out) noexcept;
void dequantize_row_q4_0(const BlockQ4_0* blocks, std::size_t n, float* out) noexcept;

}  // namespace swiglu::detail
