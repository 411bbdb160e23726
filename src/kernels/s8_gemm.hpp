// The int8 mode's kernels for a few rows: y = x @ W in exact 32-bit
// integers, s8 x and s8 W, straight from the tiles oneDNN packed for its
// own int8 kernel (brgemm on AVX512-VNNI), so that the few-row tiles of the
// ridge (4-32 tokens), where oneDNN reaches about half of what the machine
// allows, run on kernels of our own without a second copy of the weights.
// One TU per ISA (s8_gemm_<isa>.cpp), the scalar one the reference.
//
// The tile layout (oneDNN's BA16a64b4a for a (k x n) s8 matrix, with its
// s8s8 compensation): columns in blocks of 64, each block all of k, k
// padded with zeros to kp, a multiple of 64 (n to np, one of 64); within a
// block, 4 consecutive inputs of the 64 columns lie in 256 bytes:
//   byte (c / 64) * kp * 64 + (i / 4) * 256 + (c % 64) * 4 + i % 4  = W[i][c]
// so one broadcast of 4 x bytes meets 16 columns' 4 weights in each 32-bit
// lane (vpdpbusd). After the kp * np weight bytes, n int32: -128 times
// each column's sum (oneDNN's kernels add 128 to x to make it unsigned, as
// ours do, and take that off with these; the int8 mode checks every tile's
// against its own sums when it packs).
//
// The results are exact integers, the same as oneDNN's s32: no numerics
// beyond the layout.
#pragma once

#include <cstdint>

#include "kernels/isa_dispatch.hpp"

namespace swiglu::detail {

inline constexpr std::int64_t kS8Block = 64;  // columns per block, and k's padding

constexpr std::int64_t s8_padded(std::int64_t size) {
    return (size + kS8Block - 1) / kS8Block * kS8Block;
}
// Byte offset of W[i][c] in a tile of reduction length k.
constexpr std::int64_t s8_tile_offset(std::int64_t k, std::int64_t i, std::int64_t c) {
    return c / kS8Block * s8_padded(k) * kS8Block + i / 4 * 4 * kS8Block + c % kS8Block * 4 + i % 4;
}
// The compensation of a (k x n) tile: n int32 after its weights.
inline const std::int32_t* s8_tile_compensation(const std::int8_t* tile, std::int64_t k,
                                                std::int64_t n) {
    return reinterpret_cast<const std::int32_t*>(tile + s8_padded(k) * s8_padded(n));
}

// y (rows x n, row stride ldy) = x (rows x k, row stride ldx) @ W for a
// (k x n) tile in the layout above. Reads inputs [0, k) of x's rows only.
// Exact while every true sum fits 32 bits (127^2 k < 2^31, as oneDNN's).
using S8Gemm = void (*)(const std::int8_t* tile, std::int64_t k, std::int64_t n,
                        const std::int8_t* x, std::int64_t ldx, std::int64_t rows, std::int32_t* y,
                        std::int64_t ldy) noexcept;

// The s8 family: scalar (the reference), avx512_vnni (x86 builds).
const IsaDispatch<S8Gemm>& s8_dispatch() noexcept;

// This CPU's kernel, chosen once: AVX-512 with VNNI, else null (the int8
// mode runs only where oneDNN has its VNNI kernel, which packed the tiles).
S8Gemm s8_gemm() noexcept;

S8Gemm s8_gemm_scalar() noexcept;
S8Gemm s8_gemm_avx512_vnni() noexcept;

}  // namespace swiglu::detail
