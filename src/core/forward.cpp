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
// call into the numerics (numerics.hpp), every tile matmul one call into the
// engine (engine.hpp); the tracing copies are a template parameter, so
// forward() without a trace has no branch for them.
struct Chunk {
    const PackedBlock& block;
    const Numerics& mode;
    const TileEngine& engine;
    Workspace& ws;
    const float* x;  // the chunk's first row
    float* y;
    const TraceSink* trace;  // offset to the chunk's first row; null = off
    RowTile tiles[kMaxRowTilesPerChunk];
    int row_tiles = 0;
    // An engine that batches full-height tiles (the prefill engine) takes
    // the leading ones all in one task per column tile, so that a weight
    // tile is unpacked once for all of them; each other row tile is a task
    // of its own, or, with `grouped` > 1 (a chunk with no batched tiles),
    // each run of `grouped` row tiles (tiling.hpp, row_tiles_per_task).
    // slots = tasks per column tile.
    int batched_tiles = 0;
    int grouped = 1;
    int slots = 0;
    PhaseRunner runner;
    // Adjacent column tiles per task and kernel call, per phase (join_tiles).
    std::int64_t joined[kPhases] = {1, 1};
    // Row tiles a task takes through the whole block (rows_through).
    std::int64_t through = 0;

    // Where a chunk is one row tile (so slots == 1), a joinable phase's
    // tasks take runs of its tiles (tiling.hpp, joined_tiles), as many as
    // a worker's result tile holds at this height.
    void join_tiles(int threads) {
        if (row_tiles != 1 || batched_tiles != 0 || !engine.joins_for(tiles[0])) return;
        const std::int64_t most = kMaxRowTile / std::max<std::int64_t>(1, computed_rows(tiles[0]));
        for (const Phase* p : {&block.gate_up, &block.down}) {
            if (!p->joinable) continue;
            const double tile_bytes =
                double(p->k) * double(p->outputs(0)) * engine.geometry().bytes_per_weight;
            joined[static_cast<int>(p->id)] = joined_tiles(
                p->columns.count, static_cast<std::int64_t>(tile_bytes), threads, most);
        }
    }

    // A phase's tasks: its runs of joined column tiles times the slots.
    std::int64_t tasks(const Phase& phase) const {
        const std::int64_t span = joined[static_cast<int>(phase.id)];
        return slots * ((phase.columns.count + span - 1) / span);
    }

    // One task's matmul: task = column run * slots + slot (so consecutive
    // tasks share a weight tile); the result lands in the worker's tile and
    // goes to `epilogue` row tile by row tile, column tile by column tile.
    struct TileTask {
        const RowTile& rows;
        std::int64_t c0, width;  // the column tile
        float* result;           // rows.height() x (outputs_per_column * width)
        std::int64_t ld;         // result's row stride
    };
    template <class Epilogue>
    void matmuls(PhaseId id, std::int64_t task, int worker, Epilogue&& epilogue) {
        const Phase& phase = block.phase(id);
        const std::int64_t span = joined[static_cast<int>(id)];
        const std::int64_t j = task / slots * span;
        const std::int64_t count = std::min(span, phase.columns.count - j);
        const int slot = static_cast<int>(task % slots);
        TileWorker& w = ws.workers[static_cast<std::size_t>(worker)];
        if (grouped > 1) {
            for (int i = slot * grouped; i < std::min(row_tiles, (slot + 1) * grouped); ++i)
                matmul(phase, id, j, count, i, 1, w, epilogue);
            return;
        }
        // Slot 0 takes every batched tile (rows [0, 64 batched_tiles)).
        const int first = slot == 0 ? 0 : slot + (batched_tiles > 0 ? batched_tiles - 1 : 0);
        matmul(phase, id, j, count, first, slot == 0 && batched_tiles > 0 ? batched_tiles : 1, w,
               epilogue);
    }
    // Row tiles [first, first + rows) of column tiles [j, j + count) as one job.
    template <class Epilogue>
    void matmul(const Phase& phase, PhaseId id, std::int64_t j, std::int64_t count, int first,
                int rows, TileWorker& w, Epilogue& epilogue) {
        const RowTile& t = tiles[first];
        const std::int64_t n = phase.outputs(j, count);
        TileJob job{static_cast<int>(id), j, &t, rows, mode.src(id, x, t, ws), w.tile.data(), n};
        job.tiles = count;
        engine.run(phase, job, w);
        for (int r = 0; r < rows; ++r)
            for (std::int64_t i = j; i < j + count; ++i) {
                const std::int64_t c0 = phase.columns.begin(i);
                const std::int64_t offset =
                    (c0 - phase.columns.begin(j)) * phase.outputs_per_column;
                epilogue(TileTask{tiles[first + r], c0, phase.columns.size(i),
                                  w.tile.data() + r * kMaxRowTile * n + offset, n});
            }
    }

    // The rows of a tile its matmuls compute, and so the rows SiLU*up and
    // the act step take (TileEngine::computed_rows).
    std::int64_t computed_rows(const RowTile& t) const { return engine.computed_rows(t); }

    // x @ [Wg|Wu] for one tile, then SiLU(gate)*up per row while the tile
    // is in L1/L2.
    template <bool kTraced>
    void gate_up(std::int64_t task, int worker) {
        matmuls(PhaseId::gate_up, task, worker,
                [this](const TileTask& tile) { gate_up_epilogue<kTraced>(tile); });
    }

    template <bool kTraced>
    void gate_up_epilogue(const TileTask& task) {
        const auto& [t, c0, width, tile, ld] = task;
        const std::int64_t f = block.f;
        for (std::int64_t r = 0; r < computed_rows(t); ++r) {
            const std::int64_t row = t.row0 + r;
            float* g = tile + r * ld;  // [gate | up] of this row
            float* act = mode.gate_up_row(g, width, c0, row, ws);
            const auto n = static_cast<std::size_t>(width);
            const bool traced = kTraced && r < t.rows;
            if (traced) {
                std::memcpy(trace->gate + row * f + c0, g, n * sizeof(float));
                std::memcpy(trace->up + row * f + c0, g + width, n * sizeof(float));
            }
            silu_mul(g, g + width, act, n);
            mode.store_act(act, width, c0, row, ws);
            if (traced && trace->act)
                std::memcpy(trace->act + row * f + c0, act, n * sizeof(float));
        }
    }

    // The act step between the phases (Numerics::has_act_step): store_act
    // on whole f32 act rows, one task per row tile, so that threads don't
    // write neighbouring rows (shared cache lines).
    void act_step(std::int64_t task, int) {
        const RowTile& t = tiles[task];
        for (std::int64_t row = t.row0; row < t.row0 + computed_rows(t); ++row)
            mode.store_act(mode.f32_act(row, 0, ws), block.f, 0, row, ws);
    }

    void down(std::int64_t task, int worker) {
        matmuls(PhaseId::down, task, worker, [this](const TileTask& tile) {
            mode.down_out(tile.result, tile.ld, tile.width, tile.c0, tile.rows, y, ws);
        });
    }

    // Row tiles [task * through, (task + 1) * through), each through the
    // whole block: its gate|up tiles, its act step, its down tiles (see
    // rows_through).
    template <bool kTraced>
    void row_tiles_through(std::int64_t task, int worker) {
        for (std::int64_t r = task * through; r < (task + 1) * through; ++r) {
            for (std::int64_t j = 0; j < block.gate_up.columns.count; ++j)
                gate_up<kTraced>(j * slots + r, worker);
            if (mode.has_act_step()) act_step(r, worker);
            for (std::int64_t j = 0; j < block.down.columns.count; ++j) down(j * slots + r, worker);
        }
    }

    // Whether a pool runs this chunk as one task per thread, each taking an
    // equal run of row tiles through the whole block (one pool phase, no
    // barrier between the phases; the caller claims the first run, so a
    // row's x, act and y tend to stay on one core from call to call),
    // instead of phase by phase (each phase's tiles spread over the pool,
    // act and y rows handed between cores). Only where the weights stay in
    // cache and the row tiles, all one height, share out evenly; a thread
    // reads all the weights once per row tile it takes, so where it takes
    // more than one only weights a core's L2 holds (kThroughBytes; phase by
    // phase, a thread's tasks on one weight tile follow each other). The
    // same matmuls and epilogues either way, so the same bits. 2 threads,
    // one process switching call by call, against phase by phase: glass
    // (128, 341) 16 tokens 1.11-1.15x, 32 1.08-1.30x, 64 1.06-1.11x, 512
    // 1.04-1.08x; cyber (384, 1024) 16 tokens 1.04-1.05x, 64 1.01x (at 512,
    // 2 tiles a thread and 0.7-4.7 MB of weights: phase by phase). One task
    // per row tile, claimed in turn, read 1.02-1.14x (docs/measurements.md,
    // twenty-eighth session).
    bool rows_through(int threads) {
        constexpr double kThroughBytes = 512 << 10;
        if (!block.cached || batched_tiles != 0 || grouped != 1 || threads < 2 ||
            row_tiles % threads != 0)
            return false;
        for (int i = 1; i < row_tiles; ++i)
            if (tiles[i].height() != tiles[0].height()) return false;
        const double weight_bytes =
            3.0 * double(block.d) * double(block.f) * engine.geometry().bytes_per_weight;
        if (row_tiles > threads && weight_bytes > kThroughBytes) return false;
        through = row_tiles / threads;
        return true;
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
    const Numerics& mode = *block.numerics;
    const std::int64_t column_tiles =
        std::min(block.gate_up.columns.count, block.down.columns.count);
    // The bigger of the phases' weight tiles, as plan_tiles sized them.
    const auto tile_bytes = static_cast<std::int64_t>(
        block.engine->geometry().tile_bytes_per_weight *
        double(std::max(d * block.gate_up.outputs(0), f * block.down.outputs(0))));
    for (std::int64_t m0 = 0; m0 < rows; m0 += kChunkRows) {
        const std::int64_t n = std::min(kChunkRows, rows - m0);
        TraceSink chunk_trace;
        if (kTraced)
            chunk_trace = {trace->gate + m0 * f, trace->up + m0 * f,
                           trace->act ? trace->act + m0 * f : nullptr};
        Chunk chunk{
            block, mode, *block.engine, ws, x + m0 * d, y + m0 * d, &chunk_trace, {}, 0, 0, 1,
            0,     {}};
        chunk.row_tiles =
            plan_rows(n, block.min_bucket, max_row_bucket(n, column_tiles), chunk.tiles);
        if (block.engine->batches_full_tiles())  // plan_rows puts the full-height tiles first
            while (chunk.batched_tiles < chunk.row_tiles &&
                   chunk.tiles[chunk.batched_tiles].bucket == kRowBuckets - 1)
                ++chunk.batched_tiles;
        chunk.slots = chunk.row_tiles - (chunk.batched_tiles > 0 ? chunk.batched_tiles - 1 : 0);
        if (chunk.batched_tiles == 0) {
            chunk.grouped = row_tiles_per_task(column_tiles, tile_bytes, chunk.row_tiles,
                                               pool ? pool->threads() : 1);
            chunk.slots = (chunk.row_tiles + chunk.grouped - 1) / chunk.grouped;
        }
        mode.prepare_x(chunk.x, n, chunk.tiles[chunk.row_tiles - 1], ws);

        ThreadPool* use =
            pool && 6.0 * double(n) * double(d) * double(f) >= kMinParallelFlops ? pool : nullptr;
        chunk.join_tiles(use ? use->threads() : 1);
        if (use && chunk.rows_through(use->threads())) {
            chunk.run<&Chunk::row_tiles_through<kTraced>>(use, use->threads());
            continue;
        }
        chunk.run<&Chunk::gate_up<kTraced>>(use, chunk.tasks(block.gate_up));
        if (mode.has_act_step()) chunk.run<&Chunk::act_step>(use, chunk.row_tiles);
        chunk.run<&Chunk::down>(use, chunk.tasks(block.down));
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
