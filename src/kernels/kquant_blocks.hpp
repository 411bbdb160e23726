// GGUF's K-quant formats Q4_K, Q5_K and Q6_K, bit for bit as llama.cpp
// (ggml) stores, decodes and quantises them: storage formats read from a
// file (decoded to f32 exactly) and written by our tests' GGUF writer.
// Super-blocks of 256 consecutive values along a row (the input dimension):
//   Q4_K: f16 d, f16 dmin, 12 bytes of 6-bit scales sc and mins m for 8
//         sub-blocks of 32, 128 bytes of 4-bit q; value = d*sc * q - dmin*m
//         (144 bytes, 4.5 bits per weight). Sub-blocks 2i and 2i + 1 share
//         qs[32i .. 32i + 31]: the low nibbles are 2i's, the high 2i + 1's.
//         Scales: bytes 0-3 hold sc of sub-blocks 0-3 in their low 6 bits,
//         bytes 4-7 their m; sub-blocks 4-7 keep their low 4 bits of sc and
//         m in bytes 8-11 (sc low nibble, m high) and their top 2 bits in the
//         top 2 bits of bytes 0-3 (sc) and 4-7 (m).
//   Q5_K: as Q4_K, plus 32 bytes qh whose bit j of byte l is the fifth bit
//         (16) of value l of sub-block j; q in 0..31 (176 bytes).
//   Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 s8
//         sub-scales (one per 16 values), f16 d; value = d * sc * (q - 32),
//         q in 0..63 (210 bytes). Per half of 128 values (ql += 64, qh += 32):
//         value l + 32g (g = 0..3, l = 0..31) has its low nibble in
//         ql[l + 32(g & 1)] (low for g < 2, high otherwise), its top bits in
//         bits 2g, 2g + 1 of qh[l].
//
// Decoding gives ggml's dequantize_row_q{4,5,6}_K values exactly: the same
// float operations in the same order ((d * sc) * q - dmin * m; (d * sc) * q),
// with no contraction into fused multiply-adds (this TU is compiled with
// -ffp-contract=off, as ggml-base is built for x86-64 without FMA).
//
// Quantisation follows ggml's reference quantisers (quantize_row_q4_K_ref,
// _q5_K_ref, _q6_K_ref: the no-imatrix path, with make_qkx2_quants for the
// sub-blocks' scales and mins and make_qx_quants for Q6_K's), with the same
// float operations in the same order, so our blocks equal ggml's.
// Where we differ, and why:
//   - A row whose length is not a multiple of 256 ends in a super-block
//     padded with zeros (GGUF itself requires whole super-blocks).
//   - A super-block holding NaN or +-inf (ggml's result is meaningless there)
//     gets a NaN d and zeros elsewhere, so each of its values decodes to NaN.
//   - Finite inputs whose scaled values pass 2^22 (ggml asserts in debug
//     builds, garbage in release) give ggml's release bits: the rounding is
//     the same bit trick, with no undefined behaviour.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swiglu::detail {

inline constexpr std::size_t kSuperBlock = 256;

// Q4_K's and Q5_K's common head: the super-block scales and the packed
// 6-bit sub-block scales and mins.
struct ScaleMinHead {
    std::uint16_t d;     // f16 bits: scale of the sub-block scales
    std::uint16_t dmin;  // f16 bits: scale of the sub-block mins
    std::uint8_t scales[12];
};
struct BlockQ4K {
    ScaleMinHead head;
    std::uint8_t qs[kSuperBlock / 2];
};
struct BlockQ5K {
    ScaleMinHead head;
    std::uint8_t qh[kSuperBlock / 8];
    std::uint8_t qs[kSuperBlock / 2];
};
struct BlockQ6K {
    std::uint8_t ql[kSuperBlock / 2];
    std::uint8_t qh[kSuperBlock / 4];
    std::int8_t scales[kSuperBlock / 16];
    std::uint16_t d;  // f16 bits
};
static_assert(sizeof(ScaleMinHead) == 16, "K-quant head");
static_assert(sizeof(BlockQ4K) == 144 && sizeof(BlockQ5K) == 176 && sizeof(BlockQ6K) == 210,
              "GGUF super-block sizes");

// Super-blocks of one row of n values (the last one padded with zeros).
constexpr std::size_t super_blocks(std::size_t n) { return (n + kSuperBlock - 1) / kSuperBlock; }

// One super-block as integers, as our kernels' layout holds it
// (kquant_layout.hpp): each value's q (0..15, 0..31 or 0..63), the
// sub-block scales (Q4_K, Q5_K: 8 of 32 values, 0..63; Q6_K: 16 of 16,
// s8) and mins (Q4_K, Q5_K: 0..63), the f16 bits of d and dmin (Q6_K: 0).
struct KSuperBlockInts {
    std::uint8_t q[kSuperBlock];
    std::int16_t scale[16];
    std::uint8_t min[8];
    std::uint16_t d, dmin;
};
void super_block_ints(const BlockQ4K& b, KSuperBlockInts& out) noexcept;
void super_block_ints(const BlockQ5K& b, KSuperBlockInts& out) noexcept;
void super_block_ints(const BlockQ6K& b, KSuperBlockInts& out) noexcept;

// Sub-block j's (0..7) 6-bit scale and min from a packed 12-byte field.
void unpack_scale_min(const std::uint8_t* scales, int j, std::uint8_t& sc,
                      std::uint8_t& m) noexcept;

// One row of n values into super_blocks(n) super-blocks (Block: BlockQ4K,
// BlockQ5K or BlockQ6K: ggml's quantize_row_q{4,5,6}_K_ref).
template <class Block>
void quantize_row_k(const float* x, std::size_t n, Block* out) noexcept;

// The first n values of a row of super-blocks back, as ggml's
// dequantize_row_q{4,5,6}_K gives them.
template <class Block>
void dequantize_row_k(const Block* blocks, std::size_t n, float* out) noexcept;

}  // namespace swiglu::detail
