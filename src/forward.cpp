#include "forward.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>

#include "activation/silu_mul.hpp"

namespace swiglu::detail {

namespace {

// Below this many flops a chunk runs on the calling thread: waking and
// joining the pool costs a few microseconds, as much as the work itself.
constexpr double kMinParallelFlops = 1 << 20;

struct Chunk {
    const PackedBlock& block;
    Workspace& ws;
    const float* x;  // the chunk's first row
    float* y;
    const TraceSink* trace;  // offset to the chunk's first row; null = off
    RowTile tiles[kMaxRowTilesPerChunk];
    int row_tiles = 0;
    std::atomic<bool> failed{false};
    std::exception_ptr error;

    const float* x_rows(const RowTile& t) const {
        return t.padded() ? ws.x_pad.data() : x + t.row0 * block.d;
    }

    void gate_up(std::int64_t task, int worker) {
        const Phase& phase = block.gate_up;
        const std::int64_t j = task / row_tiles;
        const RowTile& t = tiles[task % row_tiles];
        WorkerState& w = ws.workers[static_cast<std::size_t>(worker)];
        execute(phase.kernel(j, t.bucket), w.bindings[0][phase.columns.is_tail(j)][t.bucket],
                w.stream, phase.tiles[static_cast<std::size_t>(j)], x_rows(t), w.tile.data(),
                w.scratchpad.data());
        const std::int64_t width = phase.columns.size(j);
        float* act = ws.act.data() + t.row0 * block.f + phase.columns.begin(j);
        if (trace) copy_trace(t, j, w.tile.data());
        for (std::int64_t r = 0; r < t.height(); ++r) {
            const float* g = w.tile.data() + r * 2 * width;
            silu_mul(g, g + width, act + r * block.f, static_cast<std::size_t>(width));
        }
        if (trace) copy_rows(act, block.f, trace->act + t.row0 * block.f + phase.columns.begin(j),
                             block.f, t.rows, width);
    }

    static void copy_rows(const float* from, std::int64_t from_stride, float* to,
                          std::int64_t to_stride, std::int64_t rows, std::int64_t width) {
        for (std::int64_t r = 0; r < rows; ++r)
            std::memcpy(to + r * to_stride, from + r * from_stride,
                        static_cast<std::size_t>(width) * sizeof(float));
    }

    // Copies a [gate | up] result tile's valid rows into the trace.
    void copy_trace(const RowTile& t, std::int64_t j, const float* tile) const {
        const std::int64_t width = block.gate_up.columns.size(j);
        const std::int64_t at = t.row0 * block.f + block.gate_up.columns.begin(j);
        copy_rows(tile, 2 * width, trace->gate + at, block.f, t.rows, width);
        copy_rows(tile + width, 2 * width, trace->up + at, block.f, t.rows, width);
    }

    void down(std::int64_t task, int worker) {
        const Phase& phase = block.down;
        const std::int64_t j = task / row_tiles;
        const RowTile& t = tiles[task % row_tiles];
        WorkerState& w = ws.workers[static_cast<std::size_t>(worker)];
        execute(phase.kernel(j, t.bucket), w.bindings[1][phase.columns.is_tail(j)][t.bucket],
                w.stream, phase.tiles[static_cast<std::size_t>(j)],
                ws.act.data() + t.row0 * block.f, w.tile.data(), w.scratchpad.data());
        const std::int64_t width = phase.columns.size(j);
        // Only the valid rows: a padded tile's extra rows are dropped here.
        copy_rows(w.tile.data(), width, y + t.row0 * block.d + phase.columns.begin(j), block.d,
                  t.rows, width);
    }

    // Runs tasks [0, n) of one phase; the first failure is kept, later tasks
    // are skipped, and it is rethrown once every thread is done.
    template <void (Chunk::*Task)(std::int64_t, int)>
    void run(ThreadPool* pool, std::int64_t n) {
        auto body = [this](std::int64_t task, int worker) {
            if (failed.load(std::memory_order_relaxed)) return;
            try {
                (this->*Task)(task, worker);
            } catch (...) {
                if (!failed.exchange(true)) error = std::current_exception();
            }
        };
        if (pool)
            pool->run(n, body);
        else
            for (std::int64_t t = 0; t < n; ++t) body(t, 0);
        if (failed.load()) std::rethrow_exception(error);
    }
};

}  // namespace

void run_block(const PackedBlock& block, Workspace& ws, ThreadPool* pool, const float* x,
               float* y, std::int64_t rows, const TraceSink* trace) {
    const std::int64_t d = block.d;
    for (std::int64_t m0 = 0; m0 < rows; m0 += kChunkRows) {
        const std::int64_t n = std::min(kChunkRows, rows - m0);
        TraceSink chunk_trace;
        if (trace)
            chunk_trace = {trace->gate + m0 * block.f, trace->up + m0 * block.f,
                           trace->act + m0 * block.f};
        Chunk chunk{block, ws, x + m0 * d, y + m0 * d, trace ? &chunk_trace : nullptr, {}, 0, {}, {}};
        const bool single_column_tile =
            block.gate_up.columns.count == 1 || block.down.columns.count == 1;
        chunk.row_tiles = plan_rows(n, block.min_bucket, max_row_bucket(n, single_column_tile),
                                    chunk.tiles);
        const RowTile& last = chunk.tiles[chunk.row_tiles - 1];
        if (last.padded())
            std::memcpy(ws.x_pad.data(), chunk.x + last.row0 * d,
                        static_cast<std::size_t>(last.rows * d) * sizeof(float));

        ThreadPool* use = pool && 6.0 * double(n) * double(d) * double(block.f) >= kMinParallelFlops ? pool : nullptr;
        chunk.run<&Chunk::gate_up>(use, chunk.row_tiles * block.gate_up.columns.count);
        chunk.run<&Chunk::down>(use, chunk.row_tiles * block.down.columns.count);
    }
}

}  // namespace swiglu::detail
