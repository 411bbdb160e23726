// Where the packer reads a weight matrix from: the caller's f32 (a public
// WeightView), or a checkpoint's tensor as the file stores it (F16, BF16,
// GGUF's Q8_0 / Q4_0 blocks, its K-quants' super-blocks), so that a block
// loads without a transient f32 copy of its weights: each tile is decoded
// into one plain f32 tile, packed, and (for a file mapping) its source pages
// are given back.
#pragma once

#include <cstddef>
#include <cstdint>

#include <swiglu/swiglu.hpp>

#include "formats/format_table.hpp"

namespace swiglu::detail {

struct WeightSource {
    Format type = Format::f32;  // a format with a decoder (format_table.hpp)
    const void* data = nullptr;
    // The matrix read: `rows` stored rows (row-major), and of each the
    // `cols` values from value `first_col` on. A window narrower than the
    // stored rows (row_values > cols) is how a tensor-parallel shard reads
    // its columns of a checkpoint's tensor in place.
    std::int64_t rows = 0, cols = 0;
    Layout layout = Layout::out_in;
    // The bytes are a read-only file mapping: once a tile is packed, the
    // pages it was read from may be dropped (they read back from the file).
    bool drop_pages = false;
    std::int64_t first_col = 0;
    std::int64_t row_values = 0;  // values per stored row; 0: cols (no window)

    std::int64_t stored_cols() const { return row_values ? row_values : cols; }

    std::int64_t in_features() const { return layout == Layout::out_in ? cols : rows; }
    std::int64_t out_features() const { return layout == Layout::out_in ? rows : cols; }
    static WeightSource from(const WeightView& w) {
        WeightSource s;
        s.data = w.data;
        s.rows = w.rows;
        s.cols = w.cols;
        s.layout = w.layout;
        return s;
    }
};

// Bytes of one stored row of `n` values (block formats: whole blocks).
std::size_t source_row_bytes(Format type, std::int64_t n);
// Where stored row `row` starts (its value 0, not first_col).
const unsigned char* source_row(const WeightSource& w, std::int64_t row);

// Columns [c0, c0 + width) of x @ W, as f32: plain[i * ld + offset + j] =
// W(i, c0 + j) for every input i, whatever the layout and type (values
// exact: each format's decoder, format_table.hpp).
void read_columns(const WeightSource& w, std::int64_t c0, std::int64_t width, float* plain,
                  std::int64_t ld, std::int64_t offset);

// After read_columns(w, c0, width, ...): drops the pages of those columns
// when w.drop_pages and they are whole rows ((out, in) layout); else nothing.
void release_columns(const WeightSource& w, std::int64_t c0, std::int64_t width) noexcept;

// For a file mapping read through a window narrower than its rows: turns
// off the kernel's read-around for those rows (MADV_RANDOM), so that a page
// fault reads that page from the file, not the ~128 KB about it, which
// would be the other shards' columns. Nothing otherwise; a failure only
// leaves read-around on.
void read_window_pages_only(const WeightSource& w) noexcept;

}  // namespace swiglu::detail
