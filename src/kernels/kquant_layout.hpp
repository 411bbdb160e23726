// The layout our K-quant kernels (kquant_gemm.hpp) stream GGUF's Q4_K, Q5_K
// and Q6_K weights in: the grouped layout of Q4_0 (grouped_layout.hpp)
// grown to super-blocks of 256 inputs.
//
// A (k x n) weight tile's columns go in groups of kGroupColumns = 8 (the
// last group padded with zero columns); a group's super-blocks lie one after
// another, one record each, so a group is one sequential stream. A record
// (group g, super-block b) holds, for inputs i = 256 b + 32 c + e of chunk c
// (0..7) and the group's column j (0..7), the quant q in 0..15 (Q4_K),
// 0..31 (Q5_K) or 0..63 (Q6_K):
//
//   nibbles  [0, 1024)    chunk c at 128 c, as a Q4_0 record's quants:
//                         byte 32 p + 4 j + t: low nibble  = q & 15 of e = 8 p + t,
//                                              high nibble = q & 15 of e = 8 p + 4 + t
//   Q5_K bits [1024, 1280) chunk c at 1024 + 32 c: byte 4 j + t, bit 2 p: q >> 4 of
//                         e = 8 p + t; bit 2 p + 1: of e = 8 p + 4 + t
//   Q6_K bits [1024, 1536) chunk c at 1024 + 64 c + 32 v (v = 0, 1): byte 4 j + t,
//                         for p = 2 v + s (s = 0, 1): bits 4 s, 4 s + 1: q >> 4 of
//                         e = 8 p + t; bits 4 s + 2, 4 s + 3: of e = 8 p + 4 + t
//   scales   sub-block i's scale of column j at byte 8 i + j (Q4_K, Q5_K:
//            8 sub-blocks of 32 inputs, u8 0..63; Q6_K: 16 of 16, s8)
//   mins     (Q4_K, Q5_K) sub-block i's min of column j at byte 8 i + j (u8 0..63)
//   d, dmin  the 8 columns' f16 super-block scales (dmin: Q4_K, Q5_K)
//
// So every 32 bytes of a plane line up with the same 32 bytes of the
// nibbles: 4 consecutive bytes hold 4 inputs of one column, one 32-bit lane
// per column, and a vector of either plane needs only shifts and masks to
// join the other. Values and scales are GGUF's bit for bit: Q4_K's and
// Q5_K's value = d * sc * q - dmin * m, Q6_K's = d * sc * (q - 32); only the
// 6-bit scales are unpacked to bytes (Q4_K's record: 1184 bytes for 8 x 144
// stored, 2.8 % more; Q5_K's 2.3 %; Q6_K's the same 1680).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/grouped_layout.hpp"
#include "kernels/kquant_blocks.hpp"

namespace swiglu::detail {

struct KRecordLayout {
    std::size_t high;      // the fifth / fifth and sixth bit plane (0: none)
    std::size_t scales;    // sub-block scales, 8 per sub-block
    std::size_t mins;      // sub-block mins (0: none)
    std::size_t d;         // 8 f16
    std::size_t dmin;      // 8 f16 (0: none)
    std::size_t bytes;     // the whole record
    int sub_blocks;        // 8 of 32 inputs, or 16 of 16
    int sub_block_inputs;  // 32 or 16
};

constexpr KRecordLayout k_record(GroupedFormat format) {
    switch (format) {
        case GroupedFormat::q5_k: return {1024, 1280, 1344, 1408, 1424, 1440, 8, 32};
        case GroupedFormat::q6_k: return {1024, 1536, 0, 1664, 0, 1680, 16, 16};
        default: return {0, 1024, 1088, 1152, 1168, 1184, 8, 32};  // q4_k
    }
}

// The integers of one stored super-block in `format` (GGUF's bytes, unaligned).
void k_super_block(GroupedFormat format, const unsigned char* stored,
                   KSuperBlockInts& out) noexcept;

// Places one column's super-block b in a tile whose bytes start zeroed.
void place_k_super_block(GroupedFormat format, const KSuperBlockInts& s, std::int64_t k,
                         std::int64_t column, std::size_t b, std::uint8_t* tile) noexcept;

// Reading a record (the scalar reference and the tests): column j's quant
// of input e (0..255), sub-block i's scale and min, d and dmin as f32.
int k_quant(GroupedFormat format, const std::uint8_t* record, int j, int e) noexcept;
int k_scale(GroupedFormat format, const std::uint8_t* record, int j, int i) noexcept;
int k_min(GroupedFormat format, const std::uint8_t* record, int j, int i) noexcept;
float k_d(GroupedFormat format, const std::uint8_t* record, int j) noexcept;
float k_dmin(GroupedFormat format, const std::uint8_t* record, int j) noexcept;

}  // namespace swiglu::detail
