// How the block is cut into tasks. Tiles depend only on the shape (d, f) and
// the token count, never on the thread count: each output element is then
// computed by the same primitive in the same order whatever the threads, so
// results are bit-identical for any thread count. (How many adjacent tiles
// one call of our own kernels runs, joined_tiles, does depend on it: those
// kernels give each column the same sums whatever the call's width.)
#pragma once

#include <cstdint>

namespace swiglu::detail {

// A matmul's output columns cut into `count` tiles of `width`, the last one
// `tail` wide (tail == width when width divides the columns).
struct ColumnTiling {
    std::int64_t columns = 0;
    std::int64_t width = 0;
    std::int64_t count = 0;
    std::int64_t tail = 0;

    std::int64_t begin(std::int64_t tile) const { return tile * width; }
    std::int64_t size(std::int64_t tile) const { return tile + 1 == count ? tail : width; }
    bool is_tail(std::int64_t tile) const { return tile + 1 == count && tail != width; }
};

// `columns` (>= 1) in tiles of `width`, or one tile of all of them when
// fewer: every tiling here ends that way, whatever chooses its width.
constexpr ColumnTiling fixed_width_tiles(std::int64_t columns, std::int64_t width) {
    const std::int64_t w = width < columns ? width : columns;
    const std::int64_t count = (columns + w - 1) / w;
    return {columns, w, count, columns - (count - 1) * w};
}
static_assert(fixed_width_tiles(341, 256).tail == 85 && fixed_width_tiles(7, 96).count == 1);

// Tiles whose weight slice is at most about `tile_bytes` (so it stays in a
// core's L2 while a row tile runs over it), widths a multiple of 64 columns
// (oneDNN's f32 weight block: 64 columns, or 32 in core/engine_onednn.cpp's
// choice for streamed blocks), as few tiles as that allows: each tile is one
// primitive execution, which costs ~0.3 us whatever its size. Except that 3,
// 5 or 7 tiles become one more: at a few tokens a tile is one task, and an
// odd count left one of 2 cores idle for a tile's time (cyber f32's gate|up,
// 3 -> 4 tiles: 1.03-1.15x at 1 and 8 tokens, 0.96-1.03x at 16-32; d = 768,
// f = 2048 bf16's down, 3 -> 4: 1.0-1.2x at 1-8 tokens).
// `multiple`: tile widths are multiples of it (64, or a K-quant block
// format's 256 where act is quantised per block of 256 in the gate|up tile).
ColumnTiling plan_columns(std::int64_t columns, std::int64_t bytes_per_column,
                          std::int64_t tile_bytes = std::int64_t{1} << 20,
                          std::int64_t multiple = 64);

// A phase's tiles as plan_columns cuts them, but in a block whose weights
// stay in cache (`cached`: !weights_stream_from_dram) a phase of
// kSplitPhaseBytes or more that would be one tile is cut in two: at 1-8
// tokens (one row tile) one tile is one task, so a second core idles and
// one core's L2 holds the whole phase. cyber's int8 and bf16 blocks ran
// 1.15-1.65x faster at 1-8 tokens in halves (int8 0.8-1.0x at 16-32: its
// act then takes a step of its own); glass's phases (341 KiB at most, f32)
// are too small: in halves int8 and bf16 ran 1.1-2x slower
// (docs/measurements.md). The same tiles for any thread count.
inline constexpr std::int64_t kSplitPhaseBytes = std::int64_t{384} << 10;
ColumnTiling plan_phase_columns(std::int64_t columns, std::int64_t bytes_per_column, bool cached,
                                std::int64_t multiple = 64);

// Adjacent column tiles one task runs as one kernel call, where an engine's
// tiles join (Phase::joinable) and a chunk is one row tile (decode): a
// call's passes start their streams cold and its last pass has no next one
// to prefetch into (kernels/grouped_prefetch.hpp), and the grouped formats'
// tiles are cut as f32's (EngineGeometry): Q4_0 one token, one thread,
// tiles of 144-162 KiB streamed 1.2-1.3x slower than ~600 KiB ones
// (docs/measurements.md). One thread runs the phase's tiles `most` at a
// time (what its result tile holds); a pool, tiles of about kJoinedBytes
// together while that leaves each thread kJoinedTasksPerThread tasks for
// the end of the phase. 8 MiB, not 1: llama7b's bf16 gate|up tile (1 MiB)
// is 2 column blocks, so a 1 MiB call reads 2 streams of 512 KiB where an
// 8 MiB one reads 4 of 2 MiB (bf16_gemv_avx512.cpp). llama7b one token, 2
// threads, against 1 MiB: bf16 1.13-1.24x, the grouped and K formats
// 0.99-1.05x; 4 tokens level (docs/measurements.md, twenty-eighth
// session). The same bits whatever it returns: which tiles share a call
// changes no column's sums.
inline constexpr std::int64_t kJoinedBytes = std::int64_t{8} << 20;
inline constexpr std::int64_t kJoinedTasksPerThread = 8;
std::int64_t joined_tiles(std::int64_t tiles, std::int64_t tile_bytes, int threads,
                          std::int64_t most);

// Row tiles: primitives exist for heights 4, 8, 16, 32, 64 only (a handful
// serve every token count). Rows are cut into 64-row tiles, then smaller
// powers of two; the last few rows are padded up to the next height when that
// wastes little (they are memory-bound anyway), so at most the last tile of a
// chunk is padded. Tiles are at least 1 << min_bucket rows (see
// min_row_bucket).
inline constexpr int kRowBuckets = 7;  // heights 1 << 0 .. 1 << 6
inline constexpr std::int64_t kMaxRowTile = 64;
// Tokens are processed in chunks of this many rows, so scratch memory does
// not grow with the token count.
inline constexpr std::int64_t kChunkRows = 256;
// Full-height tiles a chunk holds at most.
inline constexpr int kMaxPrefillTiles = static_cast<int>(kChunkRows / kMaxRowTile);
// Enough for any chunk: max_row_bucket leaves at most 7 full-height tiles,
// and the rest of a chunk takes at most one tile per smaller height.
inline constexpr int kMaxRowTilesPerChunk = 16;

struct RowTile {
    std::int64_t row0 = 0;  // first row, relative to the chunk
    std::int64_t rows = 0;  // valid rows
    int bucket = 0;         // height = 1 << bucket >= rows

    std::int64_t height() const { return std::int64_t{1} << bucket; }
    bool padded() const { return rows < height(); }
};

// The shortest row tile for a block with `weight_bytes` of weights: 4 rows
// when they stream from DRAM, since oneDNN 2.6's brgemm streams f32 and bf16
// weights faster with 3-6 rows than with 1, and decode is bound by that
// stream; 1 row for kernels that stream as well with one
// (`streams_with_one_row`, int8's VNNI kernel) and for weights that stay in
// cache, where padding's extra compute shows. PackedBlock keeps the 4 rows
// only where oneDNN runs brgemm. (docs/measurements.md)
int min_row_bucket(std::int64_t weight_bytes, bool streams_with_one_row);

// Whether a block's weights (all three matrices, packed) are too big to stay
// in this machine's caches between calls (over 8 MiB), so that every call
// streams them from DRAM.
bool weights_stream_from_dram(std::int64_t weight_bytes);

// The tallest row tile for a chunk of `rows` rows, for a block whose phases
// have at least `column_tiles` column tiles each. A phase runs row tiles x
// column tiles tasks; with few column tiles (small d or f: glass has 1,
// cyber 2 or 3) 64-row tiles leave too few tasks to spread over threads,
// so row tiles are cut until there are >= 4 full-height tiles x column
// tiles, down to 8 rows (brgemm's rate drops below that). The weight tiles
// of such blocks stay in L2, where brgemm runs 16-64 rows at the same rate
// (docs/measurements.md). Never depends on the
// thread count, so results stay bit-identical for any thread count.
int max_row_bucket(std::int64_t rows, std::int64_t column_tiles);

// Row tiles one task runs, one after another on its column tile, in a
// chunk with no batched full-height tiles: all of the chunk's when both
// phases have at least kGroupColumnTiles column tiles, and at least 4 per
// thread of the pool (the phases keep C tasks instead of up to 4 C, and
// rounds of the pool stay full), of at most kGroupTileBytes each as
// plan_tiles sized them (about a core's L2 for 2-byte weights; engines
// planned at 4 bytes a weight hold smaller tiles), else 1. With one row
// tile a task, the pool's threads took consecutive tasks -- the same
// weight tile -- at once, and each pulled it into its own L2; a task of all
// the chunk's row tiles pulls it once for them all. Measured on 2 threads
// only: llama7b bf16 on oneDNN (1 and 1.4 MiB tiles) 1.08x at 128 tokens,
// 1.035x at 512, level on one thread; f32 (2 and 2.8 MiB tiles, which no
// L2 here holds): 0.97x at 128 tokens (docs/measurements.md, sixteenth
// session). Which thread runs a row tile never changes what it computes.
inline constexpr std::int64_t kGroupColumnTiles = 16;
inline constexpr std::int64_t kGroupTileBytes = std::int64_t{3} << 19;  // 1.5 MiB
int row_tiles_per_task(std::int64_t column_tiles, std::int64_t tile_bytes, int row_tiles,
                       int threads);

// Fills `tiles` for a chunk of `rows` (1..kChunkRows) rows, tiles between
// 1 << min_bucket and 1 << max_bucket rows; returns how many.
int plan_rows(std::int64_t rows, int min_bucket, int max_bucket,
              RowTile (&tiles)[kMaxRowTilesPerChunk]);

}  // namespace swiglu::detail
