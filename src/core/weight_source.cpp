#include "core/weight_source.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace swiglu::detail {

namespace {

// Values [begin, begin + count) of the window of stored row `i`. Of a row of
// blocks, only the blocks that hold them are read (a shard's neighbours'
// blocks stay untouched on disk).
void decode(const WeightSource& w, std::int64_t i, std::int64_t begin, std::int64_t count,
            float* out, std::vector<float>& scratch) {
    decode_values(traits(w.type), source_row(w, i), w.first_col + begin, count, out, scratch);
}

}  // namespace

std::size_t source_row_bytes(Format type, std::int64_t n) {
    return static_cast<std::size_t>(row_bytes(traits(type), n));
}

const unsigned char* source_row(const WeightSource& w, std::int64_t row) {
    return static_cast<const unsigned char*>(w.data) +
           std::size_t(row) * source_row_bytes(w.type, w.stored_cols());
}

void read_columns(const WeightSource& w, std::int64_t c0, std::int64_t width, float* plain,
                  std::int64_t ld, std::int64_t offset) {
    std::vector<float> scratch;
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
