#include "core/forward.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>

#include "kernels/f32_silu_mul.hpp"
#include "kernels/convert.hpp"

namespace swiglu::detail {

namespace {

// Below this many flops a chunk runs on the calling thread: waking and
// joining the pool costs a few microseconds, as much as the work itself.
constexpr double kMinParallelFlops = 1 << 20;

void copy_rows(const float* from, std::int64_t from_stride, float* to, std::int64_t to_stride,
               std::int64_t rows, std::int64_t width) {
    for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(to + r * to_stride, from + r * from_stride,
                    static_cast<std::size_t>(width) * sizeof(float));
}

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

    bool emulated_bf16() const { return block.dtype == Dtype::bf16 && block.storage == Dtype::f32; }

    // The chunk's x as the gate|up matmul reads it (see Workspace::x_lp).
    void prepare_x(std::int64_t rows) {
        const std::int64_t d = block.d;
        const RowTile& last = tiles[row_tiles - 1];
        unsigned char* lp = ws.x_lp.data();
        switch (block.storage) {
            case Dtype::f32:
                if (emulated_bf16()) {
                    round_to_bf16(x, reinterpret_cast<float*>(lp), static_cast<std::size_t>(rows * d));
                } else if (last.padded()) {
                    std::memcpy(lp, x + last.row0 * d,
                                static_cast<std::size_t>(last.rows * d) * sizeof(float));
                }
                return;
            case Dtype::bf16:
                to_bf16(x, reinterpret_cast<std::uint16_t*>(lp), static_cast<std::size_t>(rows * d));
                return;
            case Dtype::int8:
                for (std::int64_t r = 0; r < rows; ++r)
                    ws.x_scale.data()[r] = quantize_row(
                        x + r * d, reinterpret_cast<std::int8_t*>(lp) + r * d,
                        static_cast<std::size_t>(d));
                return;
        }
    }

    const void* gate_up_src(const RowTile& t) const {
        const std::int64_t at = t.row0 * block.d;
        const unsigned char* lp = ws.x_lp.data();
        switch (block.storage) {
            case Dtype::f32:
                if (emulated_bf16()) return reinterpret_cast<const float*>(lp) + at;
                return t.padded() ? reinterpret_cast<const float*>(lp) : x + at;
            case Dtype::bf16: return reinterpret_cast<const std::uint16_t*>(lp) + at;
            case Dtype::int8: return reinterpret_cast<const std::int8_t*>(lp) + at;
        }
        return nullptr;
    }

    const void* down_src(const RowTile& t) const {
        const std::int64_t at = t.row0 * block.f;
        switch (block.storage) {
            case Dtype::f32: return ws.act.data() + at;
            case Dtype::bf16: return reinterpret_cast<const std::uint16_t*>(ws.act_lp.data()) + at;
            case Dtype::int8: return reinterpret_cast<const std::int8_t*>(ws.act_lp.data()) + at;
        }
        return nullptr;
    }

    // One task's matmul: task = column tile * row_tiles + row tile (so
    // consecutive tasks share a weight tile), result in the worker's tile.
    struct TileTask {
        const RowTile& rows;
        std::int64_t c0, width;  // the column tile
        float* result;           // rows.height() x (outputs_per_column * width)
    };
    TileTask matmul(int p, std::int64_t task, int worker) {
        const Phase& phase = p == 0 ? block.gate_up : block.down;
        const std::int64_t j = task / row_tiles;
        const RowTile& t = tiles[task % row_tiles];
        WorkerState& w = ws.workers[static_cast<std::size_t>(worker)];
        execute(phase.kernel(j, t.bucket), w.bindings[p][phase.columns.is_tail(j)][t.bucket],
                w.stream, phase.tiles[static_cast<std::size_t>(j)],
                p == 0 ? gate_up_src(t) : down_src(t), w.tile.data(), w.scratchpad.data());
        return {t, phase.columns.begin(j), phase.columns.size(j), w.tile.data()};
    }

    void gate_up(std::int64_t task, int worker) {
        const Phase& phase = block.gate_up;
        const auto [t, c0, width, tile] = matmul(0, task, worker);
        const bool quantize_here = block.act_quantized_in_gate_up();
        for (std::int64_t r = 0; r < t.height(); ++r) {
            const std::int64_t row = t.row0 + r;
            float* g = tile + r * 2 * width;  // [gate | up] of this row
            if (block.storage == Dtype::int8)
                dequantize(g, g, static_cast<std::size_t>(2 * width), ws.x_scale.data()[row],
                           phase.scales.data() + 2 * c0);
            const bool traced = trace && r < t.rows;
            if (traced) {
                copy_rows(g, 0, trace->gate + row * block.f + c0, 0, 1, width);
                copy_rows(g + width, 0, trace->up + row * block.f + c0, 0, 1, width);
            }
            // SiLU(gate) * up in f32, while the tile is in L1/L2; in place
            // when it is converted right here.
            float* act = block.storage == Dtype::bf16 || quantize_here
                             ? g
                             : ws.act.data() + row * block.f + c0;
            silu_mul(g, g + width, act, static_cast<std::size_t>(width));
            if (emulated_bf16()) round_to_bf16(act, act, static_cast<std::size_t>(width));
            if (traced) copy_rows(act, 0, trace->act + row * block.f + c0, 0, 1, width);
            if (block.storage == Dtype::bf16)
                to_bf16(act, reinterpret_cast<std::uint16_t*>(ws.act_lp.data()) + row * block.f + c0,
                        static_cast<std::size_t>(width));
            if (quantize_here) quantize_act_row(row, act);
        }
    }

    void quantize_act_row(std::int64_t row, const float* act) {
        ws.act_scale.data()[row] = quantize_row(
            act, reinterpret_cast<std::int8_t*>(ws.act_lp.data()) + row * block.f,
            static_cast<std::size_t>(block.f));
    }

    // The separate step: one task per row tile, so that threads don't write
    // neighbouring rows' scales and bytes (shared cache lines).
    void quantize_act(std::int64_t task, int) {
        const RowTile& t = tiles[task];
        for (std::int64_t row = t.row0; row < t.row0 + t.height(); ++row)
            quantize_act_row(row, ws.act.data() + row * block.f);
    }

    void down(std::int64_t task, int worker) {
        const auto [t, c0, width, tile] = matmul(1, task, worker);
        float* out = y + t.row0 * block.d + c0;
        // Only the valid rows: a padded tile's extra rows are dropped here.
        if (block.storage != Dtype::int8) {
            copy_rows(tile, width, out, block.d, t.rows, width);
            return;
        }
        for (std::int64_t r = 0; r < t.rows; ++r)
            dequantize(tile + r * width, out + r * block.d, static_cast<std::size_t>(width),
                       ws.act_scale.data()[t.row0 + r], block.down.scales.data() + c0);
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
    const std::int64_t d = block.d, f = block.f;
    const std::int64_t column_tiles = std::min(block.gate_up.columns.count, block.down.columns.count);
    for (std::int64_t m0 = 0; m0 < rows; m0 += kChunkRows) {
        const std::int64_t n = std::min(kChunkRows, rows - m0);
        TraceSink chunk_trace;
        if (trace) chunk_trace = {trace->gate + m0 * f, trace->up + m0 * f, trace->act + m0 * f};
        Chunk chunk{block, ws, x + m0 * d, y + m0 * d, trace ? &chunk_trace : nullptr, {}, 0, {}, {}};
        chunk.row_tiles = plan_rows(n, block.min_bucket, max_row_bucket(n, column_tiles),
                                    chunk.tiles);
        chunk.prepare_x(n);

        ThreadPool* use = pool && 6.0 * double(n) * double(d) * double(f) >= kMinParallelFlops
                              ? pool
                              : nullptr;
        chunk.run<&Chunk::gate_up>(use, chunk.row_tiles * block.gate_up.columns.count);
        if (block.storage == Dtype::int8 && !block.act_quantized_in_gate_up())
            chunk.run<&Chunk::quantize_act>(use, chunk.row_tiles);
        chunk.run<&Chunk::down>(use, chunk.row_tiles * block.down.columns.count);
    }
}

}  // namespace swiglu::detail
