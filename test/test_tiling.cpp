// The cut of the block into tiles: every row and column covered exactly once.
#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>

#include "core/tiling.hpp"

using namespace swiglu::detail;

TEST_SUITE("tiling") {

TEST_CASE("row tiles cover every chunk height exactly, padding only the last") {
    for (int min_bucket : {0, 2})
        for (std::int64_t column_tiles : {1, 2, 3, 64})
            for (std::int64_t rows = 1; rows <= kChunkRows; ++rows) {
                CAPTURE(rows);
                CAPTURE(min_bucket);
                CAPTURE(column_tiles);
                const int max_bucket = max_row_bucket(rows, column_tiles);
                RowTile tiles[kMaxRowTilesPerChunk];
                const int n = plan_rows(rows, min_bucket, max_bucket, tiles);
                REQUIRE(n >= 1);
                REQUIRE(n <= kMaxRowTilesPerChunk);
                std::int64_t next = 0;
                for (int i = 0; i < n; ++i) {
                    CHECK(tiles[i].row0 == next);
                    CHECK(tiles[i].rows >= 1);
                    CHECK(tiles[i].rows <= tiles[i].height());
                    CHECK(tiles[i].height() <= kMaxRowTile);
                    CHECK(tiles[i].bucket <= std::max(max_bucket, min_bucket));
                    CHECK(tiles[i].bucket < kRowBuckets);
                    CHECK(tiles[i].bucket >= min_bucket);
                    if (i + 1 < n) CHECK(!tiles[i].padded());
                    // A padded tile never runs past the chunk's act buffer.
                    CHECK(tiles[i].row0 + tiles[i].height() <= kChunkRows);
                    next += tiles[i].rows;
                }
                CHECK(next == rows);
            }
}

TEST_CASE("padding wastes little") {
    RowTile tiles[kMaxRowTilesPerChunk];
    // 37 = 32 + 5 (padded to 8), not 64.
    REQUIRE(plan_rows(37, 0, 6, tiles) == 2);
    CHECK(tiles[0].height() == 32);
    CHECK(tiles[1].rows == 5);
    CHECK(tiles[1].height() == 8);
    // 1 token is one tile of the shortest height.
    REQUIRE(plan_rows(1, 0, 6, tiles) == 1);
    CHECK(tiles[0].height() == 1);
    REQUIRE(plan_rows(1, 2, 6, tiles) == 1);
    CHECK(tiles[0].height() == 4);
    CHECK(tiles[0].rows == 1);
    // Blocks with few column tiles (glass 1, cyber 2) split rows so that
    // threads have work: >= 4 full-height row tiles x column tiles.
    CHECK(max_row_bucket(16, 1) == 3);
    CHECK(max_row_bucket(64, 1) == 4);
    CHECK(max_row_bucket(256, 1) == 6);
    CHECK(max_row_bucket(16, 2) == 3);
    CHECK(max_row_bucket(64, 2) == 5);
    CHECK(max_row_bucket(256, 2) == 6);
    CHECK(max_row_bucket(16, 64) == 4);
    CHECK(max_row_bucket(256, 64) == 6);
    REQUIRE(plan_rows(16, 0, max_row_bucket(16, 1), tiles) == 2);
    // Streamed weights get 4-row tiles at least, cache-resident ones 1-row.
    CHECK(min_row_bucket(3 * 4096 * 11008 * 4, false) == 2);
    CHECK(min_row_bucket(3 * 128 * 341 * 4, false) == 0);
    CHECK(min_row_bucket(3 * 4096 * 11008, true) == 0);
}

TEST_CASE("column tiles cover every column, widths a multiple of 64") {
    for (std::int64_t columns : {1, 2, 7, 13, 63, 64, 65, 128, 341, 384, 1024, 4096, 11008}) {
        for (std::int64_t bytes_per_column : {4, 512, 8192, 32768, 44032}) {
            CAPTURE(columns);
            CAPTURE(bytes_per_column);
            const ColumnTiling t = plan_columns(columns, bytes_per_column);
            REQUIRE(t.count >= 1);
            CHECK((t.width % 64 == 0 || t.width == columns));
            CHECK(t.tail >= 1);
            CHECK(t.tail <= t.width);
            CHECK(t.begin(t.count - 1) + t.size(t.count - 1) == columns);
            CHECK(t.is_tail(t.count - 1) == (t.tail != t.width));
            // A tile's weights stay near the L2-sized target unless one
            // 64-column block is already larger.
            CHECK(t.width * bytes_per_column <=
                  std::max<std::int64_t>(2 << 20, 64 * bytes_per_column));
        }
    }
}

TEST_CASE("a cached block's one-tile phase of 384 KiB or more is cut in two") {
    for (std::int64_t columns : {1, 64, 65, 341, 384, 1024}) {
        for (std::int64_t bytes_per_column : {4, 1024, 4096, 8192}) {
            CAPTURE(columns);
            CAPTURE(bytes_per_column);
            const ColumnTiling plain = plan_columns(columns, bytes_per_column);
            // Streamed blocks keep plan_columns' tiles.
            const ColumnTiling streamed = plan_phase_columns(columns, bytes_per_column, false);
            CHECK(streamed.count == plain.count);
            CHECK(streamed.width == plain.width);
            const ColumnTiling t = plan_phase_columns(columns, bytes_per_column, true);
            CHECK(t.begin(t.count - 1) + t.size(t.count - 1) == columns);
            CHECK((t.width % 64 == 0 || t.width == columns));
            const bool split =
                plain.count == 1 && columns > 64 && columns * bytes_per_column >= kSplitPhaseBytes;
            CHECK(t.count == (split ? 2 : plain.count));
        }
    }
    // cyber int8: gate|up (768 bytes a column) and down (1024) in halves;
    // glass's largest phase (f32 gate|up, 341 KiB) stays whole.
    CHECK(plan_phase_columns(1024, 2 * 384, true).count == 2);
    CHECK(plan_phase_columns(384, 1024, true).count == 2);
    CHECK(plan_phase_columns(341, 2 * 128 * 4, true).count == 1);
}

TEST_CASE("the reference shapes are cut as designed") {
    // glass: one tile per phase (small work, one primitive call each).
    CHECK(plan_columns(341, 2 * 128 * 4).count == 1);
    CHECK(plan_columns(128, 341 * 4).count == 1);
    // cyber f32's gate|up (3 MiB): 4 tiles, not 3 (an odd count of a few
    // tiles leaves one of 2 cores idle at a few tokens); d = 768, f = 2048
    // bf16's down (3 MiB): 4, and its gate|up (6 MiB) 6 as before. 8 tiles
    // and more stay as they are.
    CHECK(plan_columns(1024, 2 * 384 * 4).count == 4);
    CHECK(plan_columns(768, 2048 * 2).count == 4);
    CHECK(plan_columns(2048, 2 * 768 * 2).count == 6);
    CHECK(plan_columns(64 * 9, 1 << 20).count == 9);
    // llama7b: 64-column tiles, enough tasks for any core count.
    CHECK(plan_columns(11008, 2 * 4096 * 4).width == 64);
    CHECK(plan_columns(4096, 11008 * 4).width == 64);
}

TEST_CASE("a task runs all of a chunk's row tiles only on many tiles that fit a core's L2") {
    // llama7b bf16: 172 and 64 tiles of 1 and 1.4 MiB; f32's 2 and 2.8 MiB
    // tiles, and cyber's 2-4 tiles, keep one row tile a task.
    CHECK(row_tiles_per_task(64, 11008 * 64 * 2, 4, 2) == 4);
    CHECK(row_tiles_per_task(64, 11008 * 64 * 4, 4, 2) == 1);
    CHECK(row_tiles_per_task(2, 384 * 1024 * 2, 4, 2) == 1);
    CHECK(row_tiles_per_task(kGroupColumnTiles, kGroupTileBytes, 2, 2) == 2);
    // Fewer than 4 tiles a thread: the pool's rounds would run part-empty.
    CHECK(row_tiles_per_task(kGroupColumnTiles, kGroupTileBytes, 2, 12) == 1);
    CHECK(row_tiles_per_task(64, 11008 * 64 * 2, 4, 24) == 1);
    // test_block's shape (f32, d 1024, f 4096: 32 and 16 tiles of 1 MiB as
    // planned) groups on 2 threads.
    CHECK(row_tiles_per_task(16, 1024 * 64 * 4 * 4, 2, 2) == 2);
}

TEST_CASE("a decode task joins adjacent tiles: all on one thread, ~8 MiB on a pool") {
    // One thread: a qwen3moe expert's q4_0 gate|up (12 tiles of 144 KiB)
    // and down (6 of 162 KiB) each in one call; llama7b's 172 gate|up tiles
    // as many as one row's result tile holds (64), 16 with 4 rows.
    CHECK(joined_tiles(12, 144 << 10, 1, 64) == 12);
    CHECK(joined_tiles(6, 162 << 10, 1, 64) == 6);
    CHECK(joined_tiles(172, 288 << 10, 1, 64) == 64);
    CHECK(joined_tiles(172, 288 << 10, 1, 16) == 16);
    // 2 threads, llama7b q4_0: gate|up 288 KiB tiles 10 a task (18 tasks,
    // kJoinedTasksPerThread bounds it before 8 MiB does), down 387 KiB 4
    // (16); bf16's 1 MiB gate|up tiles 8 a task, its down tiles (64 columns
    // of 11008 inputs, 1.34 MiB) 4.
    CHECK(joined_tiles(172, 288 << 10, 2, 64) == 10);
    CHECK(joined_tiles(64, 387 << 10, 2, 64) == 4);
    CHECK(joined_tiles(172, 1 << 20, 2, 16) == 8);
    CHECK(joined_tiles(64, 11008 * 64 * 2, 2, 16) == 4);
    // Each thread keeps kJoinedTasksPerThread tasks: 16 threads, 64 tiles
    // run alone; tiles of 8 MiB or more, and a lone tile, too.
    CHECK(joined_tiles(64, 144 << 10, 16, 64) == 1);
    CHECK(joined_tiles(172, 8 << 20, 2, 64) == 1);
    CHECK(joined_tiles(1, 1, 1, 64) == 1);
    CHECK(joined_tiles(4, 100, 2, 64) == 1);
}

}  // TEST_SUITE
