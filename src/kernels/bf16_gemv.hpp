// The bf16 mode's kernel for one row (a decode's token): y = x @ W in f32
// from bf16 x and bf16 W, straight from the tiles oneDNN packed for its own
// bf16 kernel (brgemm on AVX-512 with BF16), so that a decode streams them
// as fast as our panel kernels stream theirs, without a second copy of the
// weights: oneDNN's brgemm reads a tile as one sequential stream, at about
// a plain read's rate, and one token's llama7b block on it ran 1.4x slower
// than on our bf16 panels (docs/measurements.md, "bf16 decode").
// One TU per ISA (bf16_gemv_<isa>.cpp), the scalar one the reference.
//
// The tile layout (oneDNN's BA16a64b2a for a (k x n) bf16 matrix): columns
// in blocks of 64, each block all of k, k padded with zeros to kp, a
// multiple of 32 (n to np, one of 64); within a block, 2 consecutive inputs
// of the 64 columns lie in 256 bytes:
//   element (c / 64) * kp * 64 + (i / 2) * 128 + (c % 64) * 2 + i % 2  = W[i][c]
// so one 32-bit lane holds one column's 2 inputs, the even one in its low
// half: a shift or a mask widens each to f32.
//
// Numerics, the same bits on every ISA: for each row m and column c, one
// chain over the inputs in order,
//   s = 0; for each input i < k: s = fma(w[i][c], x[m][i], s)
//   y[m][c] = s
// in f32, w and x widened exactly from bf16 (each product exact). So a
// column's bits do not depend on which columns share a call: tiles joined
// into one call (core/engine_bf16.cpp) give the bits of tiles called one
// by one. oneDNN's kernels add in an order of their own, so a row's bits
// differ (in the last places) from what oneDNN's gives the same row in a
// call of more rows.
#pragma once

#include <cstdint>

#include "kernels/isa_dispatch.hpp"

namespace swiglu::detail {

inline constexpr std::int64_t kBf16Block = 64;   // columns per block, and n's padding
inline constexpr std::int64_t kBf16Inputs = 32;  // inputs per block of a column block: k's padding
// Runs of consecutive column blocks a kernel reads side by side: 4 DRAM
// streams per core (bf16_gemv_avx512.cpp).
inline constexpr int kBf16Runs = 4;

constexpr std::int64_t bf16_padded_k(std::int64_t k) {
    return (k + kBf16Inputs - 1) / kBf16Inputs * kBf16Inputs;
}
constexpr std::int64_t bf16_padded_n(std::int64_t n) {
    return (n + kBf16Block - 1) / kBf16Block * kBf16Block;
}
// Element index of W[i][c] in a tile of reduction length k.
constexpr std::int64_t bf16_tile_offset(std::int64_t k, std::int64_t i, std::int64_t c) {
    return c / kBf16Block * bf16_padded_k(k) * kBf16Block + i / 2 * 2 * kBf16Block +
           c % kBf16Block * 2 + i % 2;
}

// y (rows x n, row stride ldy) = x (rows x k bf16, row stride ldx) @ W for
// a (k x n) tile in the layout above. Reads inputs [0, k) of x's rows only.
using Bf16Gemv = void (*)(const std::uint16_t* tile, std::int64_t k, std::int64_t n,
                          const std::uint16_t* x, std::int64_t ldx, std::int64_t rows, float* y,
                          std::int64_t ldy) noexcept;

// The family: scalar (the reference), avx512 (x86 builds).
const IsaDispatch<Bf16Gemv>& bf16_gemv_dispatch() noexcept;

// This CPU's kernel, chosen once: AVX-512, else null (the bf16 mode's
// tiles are oneDNN's only where it has AVX-512 bf16 kernels).
Bf16Gemv bf16_gemv() noexcept;

Bf16Gemv bf16_gemv_scalar() noexcept;
Bf16Gemv bf16_gemv_avx512() noexcept;

}  // namespace swiglu::detail
