#include "core/weight_source.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/half.hpp"
#include "kernels/ggml_blocks.hpp"

namespace swiglu::detail {

namespace {

// Room to decode the blocks that hold a row's values.
struct Scratch {
    std::vector<float> values;
    std::vector<BlockQ8_0> q8;
    std::vector<BlockQ4_0> q4;
};

// Values [begin, begin + count) of a stored row of n values. Of a row of
// blocks, only the blocks that hold them are read (a shard's neighbours'
// blocks stay untouched on disk).
void decode_row(SourceType type, const unsigned char* row, std::int64_t begin, std::int64_t count,
                float* out, Scratch& scratch) {
    switch (type) {
        case SourceType::f32: std::memcpy(out, row + 4 * begin, std::size_t(count) * 4); return;
        case SourceType::f16:
        case SourceType::bf16:
            for (std::int64_t i = 0; i < count; ++i) {
                std::uint16_t h;
                std::memcpy(&h, row + 2 * (begin + i), 2);
                out[i] = type == SourceType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
            }
            return;
        case SourceType::q8_0:
        case SourceType::q4_0: {
            // Blocks are copied out: the file's need not be aligned.
            const std::size_t first = std::size_t(begin) / kGgmlBlock;
            const std::size_t last = std::size_t(begin + count - 1) / kGgmlBlock;  // count >= 1
            const std::size_t blocks = last - first + 1, values = blocks * kGgmlBlock;
            scratch.values.resize(values);
            if (type == SourceType::q8_0) {
                scratch.q8.resize(blocks);
                std::memcpy(scratch.q8.data(), row + first * sizeof(BlockQ8_0),
                            blocks * sizeof(BlockQ8_0));
                dequantize_row_q8_0(scratch.q8.data(), values, scratch.values.data());
            } else {
                scratch.q4.resize(blocks);
                std::memcpy(scratch.q4.data(), row + first * sizeof(BlockQ4_0),
                            blocks * sizeof(BlockQ4_0));
                dequantize_row_q4_0(scratch.q4.data(), values, scratch.values.data());
            }
            std::memcpy(out, scratch.values.data() + (std::size_t(begin) - first * kGgmlBlock),
                        std::size_t(count) * sizeof(float));
            return;
        }
    }
}

// Values [begin, begin + count) of the window of stored row `i`.
void decode(const WeightSource& w, std::int64_t i, std::int64_t begin, std::int64_t count,
            float* out, Scratch& scratch) {
    if (count > 0) decode_row(w.type, source_row(w, i), w.first_col + begin, count, out, scratch);
}

}  // namespace

std::size_t source_row_bytes(SourceType type, std::int64_t n) {
    switch (type) {
        case SourceType::f32: return std::size_t(n) * 4;
        case SourceType::f16:
        case SourceType::bf16: return std::size_t(n) * 2;
        case SourceType::q8_0: return ggml_blocks(std::size_t(n)) * sizeof(BlockQ8_0);
        case SourceType::q4_0: return ggml_blocks(std::size_t(n)) * sizeof(BlockQ4_0);
    }
    return 0;
}

const unsigned char* source_row(const WeightSource& w, std::int64_t row) {
    return static_cast<const unsigned char*>(w.data) +
           std::size_t(row) * source_row_bytes(w.type, w.stored_cols());
}

void read_columns(const WeightSource& w, std::int64_t c0, std::int64_t width, float* plain,
                  std::int64_t ld, std::int64_t offset) {
    Scratch scratch;
    if (w.layout == Layout::in_out) {  // rows are inputs: a range of each
        for (std::int64_t i = 0; i < w.rows; ++i)
            decode(w, i, c0, width, plain + i * ld + offset, scratch);
        return;
    }
    // Rows are output columns: decode a few whole rows, then write them out
    // input by input (a short run of consecutive floats each time).
    constexpr std::int64_t kRows = 8;
    const std::int64_t in = w.cols;
    std::vector<float> rows(std::size_t(kRows * in));
    for (std::int64_t j0 = 0; j0 < width; j0 += kRows) {
        const std::int64_t n = std::min(kRows, width - j0);
        for (std::int64_t j = 0; j < n; ++j)
            decode(w, c0 + j0 + j, 0, in, rows.data() + j * in, scratch);
        for (std::int64_t i = 0; i < in; ++i) {
            float* to = plain + i * ld + offset + j0;
            for (std::int64_t j = 0; j < n; ++j) to[j] = rows[std::size_t(j * in + i)];
        }
    }
}

void release_columns(const WeightSource& w, std::int64_t c0, std::int64_t width) noexcept {
    if (!w.drop_pages || w.layout != Layout::out_in) return;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(source_row(w, c0));
    const auto end = reinterpret_cast<std::uintptr_t>(source_row(w, c0 + width));
    const std::uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
    // Only whole pages inside the range: a neighbour's rows stay. A failure
    // only means the pages stay resident.
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void read_window_pages_only(const WeightSource& w) noexcept {
    if (!w.drop_pages || w.cols == w.stored_cols()) return;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(source_row(w, 0)) / page * page;
    const auto end = reinterpret_cast<std::uintptr_t>(source_row(w, w.rows));
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_RANDOM);
}

}  // namespace swiglu::detail
