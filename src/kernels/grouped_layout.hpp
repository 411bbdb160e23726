// The layout our grouped kernels stream GGUF's Q8_0 and Q4_0 weights in
// (grouped_gemm.hpp), and the blocks activations are quantised to for them.
//
// A weight tile is the (k x n) slice of W that one task multiplies: n output
// columns, each a row of k inputs cut into ggml_blocks(k) blocks of 32 as in
// GGUF. Columns go in groups of kGroupColumns = 8 (the last group padded
// with zero columns); a group's blocks lie one after another, each as one
// record, so a group is one sequential stream:
//
//   record (group g, block b) = quants of the 8 columns, then their 8 f16 scales
//   Q8_0: 8 x 32 bytes: byte 32 s + 4 j + t  = q of column j, input 4 s + t
//   Q4_0: 4 x 32 bytes: byte 32 p + 4 j + t  = low nibble:  q of column j, input 8 p + t
//                                              high nibble: q of column j, input 8 p + 4 + t
//
// Every 4 consecutive bytes hold 4 consecutive inputs of one column, so one
// broadcast of 4 activation bytes meets all 8 columns in one 32-bit lane
// each (vpmaddubsw): no horizontal sum anywhere. The blocks' values and
// scales are GGUF's bit for bit; only their places change.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/act_block.hpp"
#include "kernels/ggml_blocks.hpp"

namespace swiglu::detail {

// The formats in a grouped layout: Q8_0 and Q4_0 here, and GGUF's
// K-quants, whose records are super-blocks of 256 inputs (kquant_layout.hpp).
enum class GroupedFormat { q8_0, q4_0, q4_k, q5_k, q6_k };

inline constexpr std::int64_t kGroupColumns = 8;

// Whether the format's blocks are K-quant super-blocks (activations in
// ActBlockK, kernels in kquant_gemm.hpp) rather than blocks of 32.
constexpr bool is_k_format(GroupedFormat format) {
    return format == GroupedFormat::q4_k || format == GroupedFormat::q5_k ||
           format == GroupedFormat::q6_k;
}
// Inputs per block: 32, or 256.
constexpr std::int64_t block_inputs(GroupedFormat format) {
    return is_k_format(format) ? 256 : static_cast<std::int64_t>(kGgmlBlock);
}
// Blocks along k inputs, the last one padded.
constexpr std::int64_t format_blocks(GroupedFormat format, std::int64_t k) {
    return (k + block_inputs(format) - 1) / block_inputs(format);
}

// Bytes of the quants of one Q8_0 / Q4_0 record; its 8 f16 scales follow them.
constexpr std::size_t record_quant_bytes(GroupedFormat format) {
    return format == GroupedFormat::q8_0 ? kGroupColumns * kGgmlBlock
                                         : kGroupColumns * kGgmlBlock / 2;
}
constexpr std::size_t record_bytes(GroupedFormat format) {
    switch (format) {
        case GroupedFormat::q4_k: return 1184;  // kquant_layout.hpp's k_record
        case GroupedFormat::q5_k: return 1440;
        case GroupedFormat::q6_k: return 1680;
        default: return record_quant_bytes(format) + kGroupColumns * sizeof(std::uint16_t);
    }
}
constexpr std::int64_t column_groups(std::int64_t n) {
    return (n + kGroupColumns - 1) / kGroupColumns;
}
// Bytes of a (k x n) tile: 34 (Q8_0) or 18 (Q4_0) per column and block of
// 32, 148, 180 or 210 (Q4_K, Q5_K, Q6_K) per column and super-block, padding
// columns included.
constexpr std::size_t grouped_tile_bytes(GroupedFormat format, std::int64_t k, std::int64_t n) {
    return static_cast<std::size_t>(column_groups(n)) *
           static_cast<std::size_t>(format_blocks(format, k)) * record_bytes(format);
}

// The activation blocks a format's kernels read: ActBlock (32 values) or
// ActBlockK (256), and their bytes.
constexpr std::size_t act_block_bytes(GroupedFormat format) {
    return is_k_format(format) ? sizeof(ActBlockK) : sizeof(ActBlock);
}

// Places one column's GGUF blocks (ggml_blocks(k) of them) in a tile whose
// every byte starts zeroed (padding columns stay zero: scale 0, value 0).
void place_column(const BlockQ8_0* blocks, std::int64_t k, std::int64_t column,
                  std::uint8_t* tile) noexcept;
void place_column(const BlockQ4_0* blocks, std::int64_t k, std::int64_t column,
                  std::uint8_t* tile) noexcept;

// The same from a column's blocks as a file stores them, format `format`:
// format_blocks(format, k) blocks at `blocks`, which need not be aligned.
// Load time only.
void place_stored_column(GroupedFormat format, const unsigned char* blocks, std::int64_t k,
                         std::int64_t column, std::uint8_t* tile);

// Quantises a (k x n) row-major f32 tile (n columns, k inputs each) with
// ggml's reference rounding (ggml_blocks.hpp, kquant_blocks.hpp) and places it: `tile` holds
// grouped_tile_bytes(format, k, n) bytes. Load time only.
void pack_grouped_tile(GroupedFormat format, const float* plain, std::int64_t k, std::int64_t n,
                       std::uint8_t* tile);

// One row of n activations into ggml_blocks(n) ActBlocks (act_block.hpp),
// each quantised as quantize_row does (convert.hpp: d = max|x| / 127, q =
// round-even(x / d), NaN or +-inf in a block: d = NaN, q = 0), the last one
// padded with zeros. This CPU's kernel (kernel_table.hpp): every ISA gives
// the scalar reference's bits.
void quantize_act_row(const float* x, std::size_t n, ActBlock* out) noexcept;

// One row of n activations into (n + 255) / 256 ActBlockKs, each 256 as
// quantize_row (convert.hpp) quantises them alone (this CPU's kernel), the
// last one padded with zeros, and their sums of 16.
void quantize_act_row_k(const float* x, std::size_t n, ActBlockK* out) noexcept;

// The activations of a row for `format`'s kernels: ActBlocks or ActBlockKs at `out`.
void quantize_activations(GroupedFormat format, const float* x, std::size_t n, void* out) noexcept;

}  // namespace swiglu::detail
