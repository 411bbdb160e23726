// The backward's phases (backward.hpp); its construction: backward_block.cpp.
#include "core/backward.hpp"

#include <algorithm>
#include <cstring>

#include "core/forward.hpp"
#include "core/phase_runner.hpp"
#include "kernels/silu_mul_backward.hpp"

namespace swiglu::detail {

namespace {

// Below this many flops a chunk runs on the calling thread (as forward.cpp).
constexpr double kMinParallelFlops = 1 << 20;

// Rows cut into tiles of exact power-of-two heights, at most 1 << max_bucket.
int exact_rows(std::int64_t rows, int max_bucket, RowTile* tiles) {
    int count = 0;
    std::int64_t row0 = 0;
    const std::int64_t top = std::int64_t{1} << max_bucket;
    for (; rows - row0 >= top; row0 += top) tiles[count++] = {row0, top, max_bucket};
    for (int b = max_bucket - 1; b >= 0; --b)
        if ((rows - row0) & (std::int64_t{1} << b)) {
            tiles[count++] = {row0, std::int64_t{1} << b, b};
            row0 += std::int64_t{1} << b;
        }
    return count;
}

// Enough for a chunk: 4 tiles of 64 rows, or fewer and one per smaller height.
constexpr int kMaxExactTiles = 4 + kRowBuckets;

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Phase T's tasks: this many strips, or panels, of one operand.
constexpr std::int64_t kStripsPerPackTask = 16;
constexpr std::int64_t kPanelsPerPackTask = 4;

// One chunk of rows through the phases.
struct BackwardChunk {
    BackwardChunk(const BackwardBlock& block, BackwardWorkspace& ws, const float* x,
                  const float* dy, float* dx, const float* gate, const float* up,
                  const GradientSink& sink)
        : block(block), ws(ws), x(x), dy(dy), dx(dx), gate(gate), up(up), sink(sink) {}

    const BackwardBlock& block;
    BackwardWorkspace& ws;
    const float* x;     // the chunk's first row (stride d)
    const float* dy;    // (stride d)
    float* dx;          // (stride d)
    const float* gate;  // the chunk's gate and up rows (stride f)
    const float* up;
    const GradientSink& sink;
    RowTile tiles[kMaxExactTiles];  // for phases A and B
    int row_tiles = 0;
    std::int64_t rows = 0;  // in this chunk
    GradientSpan span;
    int pack_tasks[4] = {};         // prefix sums over the asked gradients: phase T
    int gradient_tasks[4] = {};     // and phase C
    ColumnTiling gradient_cols[3];  // each gradient's column tiles for the span
    float* gradient_out[3] = {};
    PhaseRunner runner;

    // dact tile, then dgate, dup and act rows while it is in cache.
    void phase_a(std::int64_t task, int worker) {
        const std::int64_t j = task / row_tiles;
        const RowTile& t = tiles[task % row_tiles];
        const Phase& p = block.dact;
        const std::int64_t c0 = p.columns.begin(j), w = p.columns.size(j), f = block.f;
        TileWorker& bw = ws.workers[static_cast<std::size_t>(worker)];
        block.engine->run(p, TileJob{0, j, &t, 1, dy + t.row0 * block.d, bw.tile.data(), w}, bw);
        for (std::int64_t r = 0; r < t.rows; ++r) {
            const std::int64_t row = t.row0 + r;
            float* dgu = ws.dgate_up.data() + row * 2 * f;
            silu_mul_backward(gate + row * f + c0, up + row * f + c0, bw.tile.data() + r * w,
                              dgu + c0, dgu + f + c0, ws.act.data() + row * f + c0,
                              static_cast<std::size_t>(w));
        }
    }

    // S and B of a gradient at the chunk's first row (backward.hpp).
    const float* input(int role) const { return role < 2 ? x : ws.act.data(); }
    const float* output_grad(int role) const {
        return role == 2 ? dy : ws.dgate_up.data() + (role == 1 ? block.f : 0);
    }
    const float* operand_s(int role) const {
        return block.gradients[role].out_in ? output_grad(role) : input(role);
    }
    const float* operand_b(int role) const {
        return block.gradients[role].out_in ? input(role) : output_grad(role);
    }

    // Strips of a gradient's S, or panels of its B: the chunk's rows,
    // packed at their rows of the span.
    void phase_t(std::int64_t task, int) {
        int role = 0;
        while (task >= pack_tasks[role + 1]) ++role;
        const GradientGeometry& g = block.gradients[role];
        const std::int64_t strip_tasks = ceil_div(strip_count(g.rows), kStripsPerPackTask);
        std::int64_t t = task - pack_tasks[role];
        if (t < strip_tasks) {
            const std::int64_t b0 = t * kStripsPerPackTask;
            pack_column_blocks(operand_s(role), g.s_stride, rows, g.rows, kGradientStrip, b0,
                               std::min(b0 + kStripsPerPackTask, strip_count(g.rows)),
                               ws.strips[role].data() + span.row0 * kGradientStrip, span.rows);
            return;
        }
        const std::int64_t b0 = (t - strip_tasks) * kPanelsPerPackTask;
        pack_column_blocks(operand_b(role), g.b_stride, rows, g.cols, kPanelColumns, b0,
                           std::min(b0 + kPanelsPerPackTask, panel_count(g.cols)),
                           ws.panels[role].data() + span.row0 * kPanelColumns, span.rows);
    }

    // One tile of one weight gradient, over the span's rows.
    void phase_c(std::int64_t task, int) {
        int role = 0;
        while (task >= gradient_tasks[role + 1]) ++role;
        const GradientGeometry& g = block.gradients[role];
        const ColumnTiling& cols = gradient_cols[role];
        const std::int64_t tile = task - gradient_tasks[role];
        // Consecutive tasks share the tile of the larger operand (B's
        // panels when dW is wider than tall), which then stays in cache.
        const bool columns_outer = g.cols > g.rows;
        const std::int64_t i = columns_outer ? tile % g.row_tiles.count : tile / cols.count;
        const std::int64_t j = columns_outer ? tile / g.row_tiles.count : tile % cols.count;
        const std::int64_t r0 = g.row_tiles.begin(i), c0 = cols.begin(j);
        const bool add = !span.first || sink.accumulate;
        block.gradient_gemm(ws.strips[role].data() + r0 * span.rows,
                            ws.panels[role].data() + c0 * span.rows, span.rows, g.row_tiles.size(i),
                            cols.size(j), gradient_out[role] + r0 * g.cols + c0, g.cols, add);
    }

    // dx tile from [dgate | dup] (on our panels: from the inputs of slice
    // `slice` of dx_slices), into dx.
    ColumnTiling dx_slices;
    std::int64_t slice = 0;
    void phase_b(std::int64_t task, int worker) {
        const std::int64_t j = task / row_tiles;
        const RowTile& t = tiles[task % row_tiles];
        const Phase& p = block.dx;
        const std::int64_t c0 = p.columns.begin(j);
        const float* source = ws.dgate_up.data() + t.row0 * 2 * block.f;
        const std::int64_t i0 = dx_slices.begin(slice);
        block.engine->run(p,
                          TileJob{1, j, &t, 1, source, dx + t.row0 * block.d + c0, block.d, i0,
                                  block.engine->input_slices() ? i0 + dx_slices.size(slice) : 0},
                          ws.workers[static_cast<std::size_t>(worker)]);
    }

    // Phases C and B as one phase of n_cb tasks, n_b of them B's. B reads
    // weights and C writes gradients; a chunk of one row tile (a power of
    // two up to kMaxRowTile rows) spreads B's tasks evenly among C's (slot
    // t is B's when floor((t + 1) n_b / n_cb) steps up), so the two
    // streams overlap. With more row tiles B's consecutive tasks reuse a
    // weight tile from L2, which C's tasks between them would evict: C's
    // first, then B's (docs/measurements.md, "Phases C and B as one").
    std::int64_t n_b = 0, n_cb = 0;
    bool interleave = false;
    void phase_cb(std::int64_t task, int worker) {
        if (interleave) {
            const std::int64_t before = task * n_b / n_cb;  // B's slots before this one
            if ((task + 1) * n_b / n_cb > before)
                phase_b(before, worker);
            else
                phase_c(task - before, worker);
        } else if (task < n_cb - n_b) {
            phase_c(task, worker);
        } else {
            phase_b(task - (n_cb - n_b), worker);
        }
    }

    // Runs tasks [0, n) of one phase (phase_runner.hpp).
    template <void (BackwardChunk::*Task)(std::int64_t, int)>
    void run(ThreadPool* pool, std::int64_t n) {
        runner.run(pool, n, [this](std::int64_t task, int worker) { (this->*Task)(task, worker); });
    }
};

}  // namespace

void run_backward(const BackwardBlock& backward, BackwardWorkspace& ws, const PackedBlock& block,
                  Workspace& forward_ws, ThreadPool* pool, const float* x, const float* dy,
                  float* dx, std::int64_t rows, const GradientSink& sink, const float* saved) {
    const std::int64_t d = backward.d, f = backward.f;
    float* outputs[3] = {sink.gate, sink.up, sink.down};
    for (std::int64_t m0 = 0; m0 < rows; m0 += kChunkRows) {
        const std::int64_t n = std::min(kChunkRows, rows - m0);
        ThreadPool* use =
            pool && 12.0 * double(n) * double(d) * double(f) >= kMinParallelFlops ? pool : nullptr;
        const float* gate = ws.gate.data();
        const float* up = ws.up.data();
        if (saved) {
            gate = saved + m0 * f;
            up = saved + rows * f + m0 * f;
        } else {
            const TraceSink keep{ws.gate.data(), ws.up.data(), nullptr};
            run_block(block, forward_ws, use, x + m0 * d, ws.y.data(), n, &keep);
        }
        BackwardChunk chunk(backward, ws, x + m0 * d, dy + m0 * d, dx + m0 * d, gate, up, sink);
        chunk.row_tiles = exact_rows(n, kRowBuckets - 1, chunk.tiles);
        chunk.rows = n;
        chunk.span = gradient_span(m0, n, rows);
        for (int role = 0; role < 3; ++role) {
            const GradientGeometry& g = backward.gradients[role];
            const bool asked = outputs[role] != nullptr;
            chunk.gradient_out[role] = outputs[role];
            chunk.gradient_cols[role] = gradient_column_tiles(g.cols, chunk.span.rows);
            chunk.pack_tasks[role + 1] =
                chunk.pack_tasks[role] +
                (asked ? static_cast<int>(ceil_div(strip_count(g.rows), kStripsPerPackTask) +
                                          ceil_div(panel_count(g.cols), kPanelsPerPackTask))
                       : 0);
            chunk.gradient_tasks[role + 1] =
                chunk.gradient_tasks[role] +
                (asked ? static_cast<int>(g.row_tiles.count * chunk.gradient_cols[role].count) : 0);
        }
        chunk.run<&BackwardChunk::phase_a>(use, chunk.row_tiles * backward.dact.columns.count);
        if (chunk.gradient_tasks[3] > 0)
            chunk.run<&BackwardChunk::phase_t>(use, chunk.pack_tasks[3]);
        chunk.n_b = chunk.row_tiles * backward.dx.columns.count;
        chunk.n_cb = chunk.n_b + (chunk.span.ends ? chunk.gradient_tasks[3] : 0);
        chunk.interleave = chunk.row_tiles == 1;
        // Slices on our panels where B's tasks run after C's (interleaved
        // with them, one row tile's B tasks are few and spread out).
        chunk.dx_slices = backward.engine->input_slices() && !chunk.interleave
                              ? dx_input_slices(2 * f, n)
                              : fixed_width_tiles(2 * f, 2 * f);
        chunk.run<&BackwardChunk::phase_cb>(use, chunk.n_cb);
        for (chunk.slice = 1; chunk.slice < chunk.dx_slices.count; ++chunk.slice)
            chunk.run<&BackwardChunk::phase_b>(use, chunk.n_b);
    }
}

}  // namespace swiglu::detail
