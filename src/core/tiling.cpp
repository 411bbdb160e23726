#include "core/tiling.hpp"

#include <algorithm>
#include <cassert>

namespace swiglu::detail {

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int bucket_of(std::int64_t height, int min_bucket) {
    int b = min_bucket;
    while ((std::int64_t{1} << b) < height) ++b;
    return b;
}
}  // namespace

ColumnTiling plan_columns(std::int64_t columns, std::int64_t bytes_per_column,
                          std::int64_t tile_bytes, std::int64_t multiple) {
    std::int64_t wanted = std::max<std::int64_t>(
        1, ceil_div(columns * bytes_per_column, std::max<std::int64_t>(1, tile_bytes)));
    if (wanted > 1 && wanted < 8 && wanted % 2 == 1) ++wanted;  // an even count (tiling.hpp)
    return fixed_width_tiles(columns, ceil_div(ceil_div(columns, wanted), multiple) * multiple);
}

ColumnTiling plan_phase_columns(std::int64_t columns, std::int64_t bytes_per_column, bool cached,
                                std::int64_t multiple) {
    const ColumnTiling t = plan_columns(columns, bytes_per_column, std::int64_t{1} << 20, multiple);
    const std::int64_t phase_bytes = columns * bytes_per_column;
    if (!cached || t.count > 1 || phase_bytes < kSplitPhaseBytes) return t;
    return plan_columns(columns, bytes_per_column, ceil_div(phase_bytes, 2), multiple);
}

std::int64_t joined_tiles(std::int64_t tiles, std::int64_t tile_bytes, int threads,
                          std::int64_t most) {
    std::int64_t span = tiles;
    if (threads > 1)
        span = std::min(kJoinedBytes / std::max<std::int64_t>(1, tile_bytes),
                        tiles / (kJoinedTasksPerThread * threads));
    return std::clamp<std::int64_t>(std::min(span, most), 1, std::max<std::int64_t>(1, tiles));
}

bool weights_stream_from_dram(std::int64_t weight_bytes) {
    constexpr std::int64_t kCacheResident = std::int64_t{8} << 20;
    return weight_bytes > kCacheResident;
}

int min_row_bucket(std::int64_t weight_bytes, bool streams_with_one_row) {
    return weights_stream_from_dram(weight_bytes) && !streams_with_one_row ? 2 : 0;
}

int max_row_bucket(std::int64_t rows, std::int64_t column_tiles) {
    constexpr std::int64_t kMinTasks = 4;
    int b = kRowBuckets - 1;
    while (b > 3 && (rows >> b) * column_tiles < kMinTasks) --b;
    return b;
}

int row_tiles_per_task(std::int64_t column_tiles, std::int64_t tile_bytes, int row_tiles,
                       int threads) {
    const bool many = column_tiles >= std::max(kGroupColumnTiles, 4 * std::int64_t{threads});
    return many && tile_bytes <= kGroupTileBytes ? row_tiles : 1;
}

int plan_rows(std::int64_t rows, int min_bucket, int max_bucket,
              RowTile (&tiles)[kMaxRowTilesPerChunk]) {
    assert(rows >= 1 && rows <= kChunkRows && min_bucket <= max_bucket);
    const std::int64_t tallest = std::int64_t{1} << max_bucket;
    int n = 0;
    std::int64_t row0 = 0;
    std::int64_t left = rows;
    while (left > 0) {
        const std::int64_t full = std::min(left, tallest);
        const int up = bucket_of(full, min_bucket);  // smallest height holding them all
        const std::int64_t height = std::int64_t{1} << up;
        // Pad when few rows are left or padding wastes at most a quarter.
        if (left == full && (left <= 16 || height - left <= height / 4)) {
            tiles[n++] = {row0, left, up};
            break;
        }
        const int down = left >= tallest ? max_bucket : (height == left ? up : up - 1);
        const std::int64_t take = std::int64_t{1} << down;
        tiles[n++] = {row0, take, down};
        row0 += take;
        left -= take;
    }
    return n;
}

}  // namespace swiglu::detail
