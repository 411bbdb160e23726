#include "core/forward.hpp"

#include <algorithm>
#include <cstring>

#include "core/phase_runner.hpp"
#include "kernels/f32_silu_mul.hpp"

namespace swiglu::detail {

namespace {

// Below this many flops a chunk runs on the calling thread: waking and
// joining the pool costs a few microseconds, as much as the work itself.
constexpr double kMinParallelFlops = 1 << 20;

// One chunk of rows through both phases. Every format-specific step is a
// call into the precision mode (precision.hpp); the tracing copies are a
// template parameter, so forward() without a trace has no branch for them.
struct Chunk {
    const PackedBlock& block;
    const Precision& mode;
    Workspace& ws;
    const float* x;  // the chunk's first row
    float* y;
    const TraceSink* trace;  // offset to the chunk's first row; null = off
    RowTile tiles[kMaxRowTilesPerChunk];
    int row_tiles = 0;
    // A mode's prefill path (precision.hpp) takes the leading full-height
    // tiles, all in one task per column tile, so that a weight tile is
    // unpacked once for all of them; each other row tile is a task of its
    // own. slots = tasks per column tile.
    int prefill_tiles = 0;
    int slots = 0;
    PhaseRunner runner;

    // One task's matmuls: task = column tile * slots + slot (so consecutive
    // tasks share a weight tile); each result lands in the worker's tile
    // and goes to `epilogue` before the next.
    struct TileTask {
        const RowTile& rows;
        std::int64_t c0, width;  // the column tile
        float* result;           // rows.height() x (outputs_per_column * width)
    };
    template <class Epilogue>
    void matmuls(PhaseId id, std::int64_t task, int worker, Epilogue&& epilogue) {
        const Phase& phase = block.phase(id);
        const std::int64_t j = task / slots;
        const int slot = static_cast<int>(task % slots);
        const std::int64_t c0 = phase.columns.begin(j), width = phase.columns.size(j);
        const bool tail = phase.columns.is_tail(j);
        const auto tile = static_cast<std::size_t>(j);
        WorkerState& w = ws.workers[static_cast<std::size_t>(worker)];
        if (prefill_tiles > 0 && slot == 0) {  // rows [0, 64 prefill_tiles), one matmul
            const int p = static_cast<int>(id), t = tail ? 1 : 0, h = prefill_tiles - 1;
            mode.unpack_tile(phase.tile_data[tile], phase.k, phase.outputs(j), w.unpacked.data());
            execute(phase.prefill[t][h], w.prefill_bindings[p][t][h], w.stream,
                    w.unpacked_weights[p][t], mode.prefill_src(id, tiles[0], ws), w.tile.data(),
                    w.scratchpad.data());
            for (int r = 0; r < prefill_tiles; ++r)
                epilogue(TileTask{tiles[r], c0, width,
                                  w.tile.data() + r * kMaxRowTile * phase.outputs(j)});
            return;
        }
        const RowTile& t = tiles[slot + (prefill_tiles > 0 ? prefill_tiles - 1 : 0)];
        if (mode.own_rows(t)) {
            mode.matmul_tile(id, phase.tile_data[tile], phase.k, phase.outputs(j), t, ws,
                             w.tile.data());
        } else {
            const void* src =
                id == PhaseId::gate_up ? mode.gate_up_src(x, t, ws) : mode.down_src(t, ws);
            execute(phase.kernel(j, t.bucket), w.binding(id, tail, t.bucket), w.stream,
                    phase.tiles[tile], src, w.tile.data(), w.scratchpad.data());
        }
        epilogue(TileTask{t, c0, width, w.tile.data()});
    }

    // The rows of a tile its matmuls compute, and so the rows SiLU*up and
    // the mode's act step take: padding rows too where oneDNN computes them
    // (they are dropped in the down phase); our own kernels compute valid
    // rows only (5-7 tokens ran 8 rows' work, 9-15 sixteen's), and their
    // padding rows of act are never read (own_rows depends on the tile
    // alone, so both phases of a tile take the same kernels).
    std::int64_t computed_rows(const RowTile& t) const {
        return mode.own_rows(t) ? t.rows : t.height();
    }

    // x @ [Wg|Wu] for one tile, then SiLU(gate)*up per row while the tile
    // is in L1/L2.
    template <bool kTraced>
    void gate_up(std::int64_t task, int worker) {
        matmuls(PhaseId::gate_up, task, worker,
                [this](const TileTask& tile) { gate_up_epilogue<kTraced>(tile); });
    }

    template <bool kTraced>
    void gate_up_epilogue(const TileTask& task) {
        const auto& [t, c0, width, tile] = task;
        const std::int64_t f = block.f;
        for (std::int64_t r = 0; r < computed_rows(t); ++r) {
            const std::int64_t row = t.row0 + r;
            float* g = tile + r * 2 * width;  // [gate | up] of this row
            mode.gate_up_to_f32(g, width, c0, row, ws);
            const auto n = static_cast<std::size_t>(width);
            const bool traced = kTraced && r < t.rows;
            if (traced) {
                std::memcpy(trace->gate + row * f + c0, g, n * sizeof(float));
                std::memcpy(trace->up + row * f + c0, g + width, n * sizeof(float));
            }
            float* act = mode.act_row(g, c0, row, ws);
            silu_mul(g, g + width, act, n);
            mode.store_act(act, width, c0, row, ws);
            if (traced && trace->act)
                std::memcpy(trace->act + row * f + c0, act, n * sizeof(float));
        }
    }

    // The mode's step between the phases: one task per row tile, so that
    // threads don't write neighbouring rows (shared cache lines).
    void act_step(std::int64_t task, int) {
        const RowTile& t = tiles[task];
        for (std::int64_t row = t.row0; row < t.row0 + computed_rows(t); ++row)
            mode.act_step(row, ws);
    }

    void down(std::int64_t task, int worker) {
        matmuls(PhaseId::down, task, worker, [this](const TileTask& tile) {
            mode.down_out(tile.result, tile.width, tile.c0, tile.rows, y, ws);
        });
    }

    // Runs tasks [0, n) of one phase (phase_runner.hpp).
    template <void (Chunk::*Task)(std::int64_t, int)>
    void run(ThreadPool* pool, std::int64_t n) {
        runner.run(pool, n, [this](std::int64_t task, int worker) { (this->*Task)(task, worker); });
    }
};

template <bool kTraced>
void run_chunks(const PackedBlock& block, Workspace& ws, ThreadPool* pool, const float* x, float* y,
                std::int64_t rows, const TraceSink* trace) {
    const std::int64_t d = block.d, f = block.f;
    const Precision& mode = *block.precision;
    const std::int64_t column_tiles =
        std::min(block.gate_up.columns.count, block.down.columns.count);
    for (std::int64_t m0 = 0; m0 < rows; m0 += kChunkRows) {
        const std::int64_t n = std::min(kChunkRows, rows - m0);
        TraceSink chunk_trace;
        if (kTraced)
            chunk_trace = {trace->gate + m0 * f, trace->up + m0 * f,
                           trace->act ? trace->act + m0 * f : nullptr};
        Chunk chunk{block, mode, ws, x + m0 * d, y + m0 * d, &chunk_trace, {}, 0, 0, 0, {}};
        chunk.row_tiles =
            plan_rows(n, block.min_bucket, max_row_bucket(n, column_tiles), chunk.tiles);
        if (block.has_prefill())  // plan_rows puts the full-height tiles first
            while (chunk.prefill_tiles < chunk.row_tiles &&
                   chunk.tiles[chunk.prefill_tiles].bucket == kRowBuckets - 1)
                ++chunk.prefill_tiles;
        chunk.slots = chunk.row_tiles - (chunk.prefill_tiles > 0 ? chunk.prefill_tiles - 1 : 0);
        mode.prepare_x(chunk.x, n, chunk.tiles[chunk.row_tiles - 1], ws);

        ThreadPool* use =
            pool && 6.0 * double(n) * double(d) * double(f) >= kMinParallelFlops ? pool : nullptr;
        chunk.run<&Chunk::gate_up<kTraced>>(use, chunk.slots * block.gate_up.columns.count);
        if (mode.has_act_step()) chunk.run<&Chunk::act_step>(use, chunk.row_tiles);
        chunk.run<&Chunk::down>(use, chunk.slots * block.down.columns.count);
    }
}

}  // namespace

void run_block(const PackedBlock& block, Workspace& ws, ThreadPool* pool, const float* x, float* y,
               std::int64_t rows, const TraceSink* trace) {
    if (trace)
        run_chunks<true>(block, ws, pool, x, y, rows, trace);
    else
        run_chunks<false>(block, ws, pool, x, y, rows, nullptr);
}

}  // namespace swiglu::detail
