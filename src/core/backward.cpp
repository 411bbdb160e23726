#include "core/backward.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/forward.hpp"
#include "core/phase_runner.hpp"
#include "kernels/silu_mul_backward.hpp"

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

// Weight tiles of phases A and B: a quarter of the forward's, so a tile
// stays in a core's L2 while every row tile of the chunk runs over it
// (cyber, 512 tokens: phase A 42 -> GFLOP/s).
constexpr std::int64_t kBackwardTileBytes = std::int64_t{1} << 18;

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

}  // namespace

BackwardBlock::BackwardBlock(const PackedBlock& block, const Layout (&layouts)[3])
    : d(block.d), f(block.f) {
    dact.k = d;
    dact.columns = plan_columns(f, 4 * d, kBackwardTileBytes);
    dx.k = 2 * f;
    dx.columns = plan_columns(d, 8 * f, kBackwardTileBytes);
    // The forward's f32 mode is its panels where it owns its kernels.
    const Precision& mode = *block.precision;
    if (mode.dtype() == Dtype::f32 && mode.own_kernels()) panels = panel_kernels()[PanelType::f32];
    if (!panels) {
        make_phase_kernels(dact, 0, {}, false);
        make_phase_kernels(dx, 0, {}, false);
    }
    plan_gradients(layouts);
    gradient_gemm = swiglu::detail::gradient_gemm();
    pack(block);
    std::set<std::string> impls;
    if (panels) impls.insert("f32 panels:" + std::string(isa_name(panel_kernels_isa())));
    impls.insert("f32 gradients:" + std::string(isa_name(gradient_gemm_isa())));
    auto note = [&](const MatmulKernel& k) {
        if (!k) return;
        impls.insert(k.implementation);
        scratchpad_bytes = std::max(scratchpad_bytes, k.scratchpad_bytes);
    };
    for (const Phase* p : {&dact, &dx})
        for (const auto& row : p->kernels)
            for (const MatmulKernel& k : row) note(k);
    for (const std::string& name : impls)
        implementation += (implementation.empty() ? "" : ",") + name;
}

// The forward's f32 weights, read back tile by tile into plain (in, out)
// matrices, then transposed into the backward's tiles: Wd^T's (d x w)
// slices of f, and [Wg^T ; Wu^T]'s (2f x w) slices of d.
void BackwardBlock::pack(const PackedBlock& block) {
    const Precision& mode = *block.precision;
    const auto df = static_cast<std::size_t>(d * f);
    std::vector<float> wg(df), wu(df), wd(df), plain;  // (d, f), (d, f), (f, d)
    const Phase& gu = block.gate_up;
    for (std::int64_t j = 0; j < gu.columns.count; ++j) {
        const std::int64_t c0 = gu.columns.begin(j), w = gu.columns.size(j);
        plain.resize(static_cast<std::size_t>(d * 2 * w));
        if (!mode.unpack_f32(gu.tiles[static_cast<std::size_t>(j)], d, 2 * w, plain.data()))
            throw Error(Status::unsupported,
                        std::string("backward: needs an Ffn of dtype f32 (this one is ") +
                            dtype_name(mode.dtype()) + ")");
        for (std::int64_t i = 0; i < d; ++i)
            for (std::int64_t c = 0; c < w; ++c) {
                wg[static_cast<std::size_t>(i * f + c0 + c)] = plain[i * 2 * w + c];
                wu[static_cast<std::size_t>(i * f + c0 + c)] = plain[i * 2 * w + w + c];
            }
    }
    const Phase& dn = block.down;
    for (std::int64_t j = 0; j < dn.columns.count; ++j) {
        const std::int64_t c0 = dn.columns.begin(j), w = dn.columns.size(j);
        plain.resize(static_cast<std::size_t>(f * w));
        mode.unpack_f32(dn.tiles[static_cast<std::size_t>(j)], f, w, plain.data());
        for (std::int64_t i = 0; i < f; ++i)
            std::memcpy(&wd[static_cast<std::size_t>(i * d + c0)], &plain[i * w],
                        static_cast<std::size_t>(w) * sizeof(float));
    }

    auto bytes = [&](const Phase& p, std::int64_t j) {
        const std::size_t size = panels ? panel_tile_bytes(PanelType::f32, p.k, p.columns.size(j))
                                        : p.kernel(j, kRowBuckets - 1).weights.get_size();
        return (size + 63) / 64 * 64;
    };
    std::size_t total = 0;
    for (const Phase* p : {&dact, &dx})
        for (std::int64_t j = 0; j < p->columns.count; ++j) total += bytes(*p, j);
    arena = WeightArena(total);
    std::size_t offset = 0;
    auto place = [&](Phase& p, std::int64_t j, const std::vector<float>& tile, std::int64_t n) {
        p.tile_data.push_back(arena.data() + offset);
        if (panels) {
            pack_panels(PanelType::f32, tile.data(), p.k, n, arena.data() + offset);
        } else {
            p.tiles.emplace_back(p.kernel(j, kRowBuckets - 1).weights, cpu_engine(),
                                 arena.data() + offset);
            reorder(tile.data(), dnnl::memory::desc({p.k, n}, dt::f32, {n, 1}), p.tiles.back());
        }
        offset += bytes(p, j);
    };
    // Wd^T tile j: (d x w), element (i, c) = Wd(c0 + c, i).
    for (std::int64_t j = 0; j < dact.columns.count; ++j) {
        const std::int64_t c0 = dact.columns.begin(j), w = dact.columns.size(j);
        plain.assign(static_cast<std::size_t>(d * w), 0.0f);
        for (std::int64_t c = 0; c < w; ++c)
            for (std::int64_t i = 0; i < d; ++i) plain[i * w + c] = wd[(c0 + c) * d + i];
        place(dact, j, plain, w);
    }
    // [Wg^T ; Wu^T] tile j: (2f x w), element (k, c) = Wg(c0 + c, k) for
    // k < f, Wu(c0 + c, k - f) after.
    for (std::int64_t j = 0; j < dx.columns.count; ++j) {
        const std::int64_t c0 = dx.columns.begin(j), w = dx.columns.size(j);
        plain.assign(static_cast<std::size_t>(2 * f * w), 0.0f);
        for (std::int64_t c = 0; c < w; ++c)
            for (std::int64_t k = 0; k < f; ++k) {
                plain[k * w + c] = wg[(c0 + c) * f + k];
                plain[(f + k) * w + c] = wu[(c0 + c) * f + k];
            }
        place(dx, j, plain, w);
    }
}

// Each gradient as its weight is held: (out, in) takes dW = dOut^T @ In,
// (in, out) dW = In^T @ dOut, with In / dOut the span's rows of x and
// [dgate | dup] (gate, up) or of act and dy (down).
void BackwardBlock::plan_gradients(const Layout (&layouts)[3]) {
    for (int role = 0; role < 3; ++role) {
        GradientGeometry& g = gradients[role];
        const bool out_in = g.out_in = layouts[role] == Layout::out_in;
        if (role < 2) {  // gate, up: In = x (stride d), dOut = a half of [dgate | dup] (2f)
            g.rows = out_in ? f : d;
            g.cols = out_in ? d : f;
            g.s_stride = out_in ? 2 * f : d;
            g.b_stride = out_in ? d : 2 * f;
        } else {  // down: In = act (stride f), dOut = dy (d)
            g.rows = out_in ? d : f;
            g.cols = out_in ? f : d;
            g.s_stride = out_in ? d : f;
            g.b_stride = out_in ? f : d;
        }
        g.row_tiles = fixed_width_tiles(g.rows, kGradientTileRows);
    }
}

BackwardWorker::BackwardWorker(const BackwardBlock& block)
    : stream(cpu_engine()),
      tile(static_cast<std::size_t>(kMaxRowTile *
                                    std::max(block.dact.columns.width, block.dx.columns.width))),
      scratchpad(block.scratchpad_bytes) {
    for (int t = 0; t < 2; ++t)
        for (int b = 0; b < kRowBuckets; ++b) {
            if (const MatmulKernel& k = block.dact.kernels[t][b]) dact[t][b].bind(k);
            if (const MatmulKernel& k = block.dx.kernels[t][b]) dx[t][b].bind(k);
        }
}

BackwardWorkspace::BackwardWorkspace(const BackwardBlock& block, int threads)
    : gate(static_cast<std::size_t>(kChunkRows * block.f)),
      up(static_cast<std::size_t>(kChunkRows * block.f)),
      y(static_cast<std::size_t>(kChunkRows * block.d)),
      dgate_up(static_cast<std::size_t>(kChunkRows * 2 * block.f)),
      act(static_cast<std::size_t>(kChunkRows * block.f)) {
    for (int role = 0; role < 3; ++role) {
        const GradientGeometry& g = block.gradients[role];
        strips[role] = AlignedBuffer<float>(
            static_cast<std::size_t>(kGradientSpanRows * strip_count(g.rows) * kGradientStrip));
        panels[role] = AlignedBuffer<float>(
            static_cast<std::size_t>(kGradientSpanRows * panel_count(g.cols) * kPanelColumns));
    }
    workers.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w) workers.emplace_back(block);
}

namespace {

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
        const bool tail = p.columns.is_tail(j);
        BackwardWorker& bw = ws.workers[static_cast<std::size_t>(worker)];
        if (block.panels)
            block.panels.gemm(p.tile_data[static_cast<std::size_t>(j)], p.k, w,
                              dy + t.row0 * block.d, block.d, t.rows, bw.tile.data(), w);
        else
            execute(p.kernel(j, t.bucket), bw.dact[tail ? 1 : 0][t.bucket], bw.stream,
                    p.tiles[static_cast<std::size_t>(j)], dy + t.row0 * block.d, bw.tile.data(),
                    bw.scratchpad.data());
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
        const std::int64_t c0 = p.columns.begin(j), w = p.columns.size(j);
        const bool tail = p.columns.is_tail(j);
        const float* source = ws.dgate_up.data() + t.row0 * 2 * block.f;
        if (block.panels) {  // straight into dx
            const std::int64_t i0 = dx_slices.begin(slice);
            block.panels.range(p.tile_data[static_cast<std::size_t>(j)], p.k, i0,
                               i0 + dx_slices.size(slice), w, source, p.k, t.rows,
                               dx + t.row0 * block.d + c0, block.d);
            return;
        }
        BackwardWorker& bw = ws.workers[static_cast<std::size_t>(worker)];
        execute(p.kernel(j, t.bucket), bw.dx[tail ? 1 : 0][t.bucket], bw.stream,
                p.tiles[static_cast<std::size_t>(j)], source, bw.tile.data(), bw.scratchpad.data());
        for (std::int64_t r = 0; r < t.rows; ++r)
            std::memcpy(dx + (t.row0 + r) * block.d + c0, bw.tile.data() + r * w,
                        static_cast<std::size_t>(w) * sizeof(float));
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
        chunk.dx_slices = backward.panels && !chunk.interleave ? dx_input_slices(2 * f, n)
                                                               : fixed_width_tiles(2 * f, 2 * f);
        chunk.run<&BackwardChunk::phase_cb>(use, chunk.n_cb);
        for (chunk.slice = 1; chunk.slice < chunk.dx_slices.count; ++chunk.slice)
            chunk.run<&BackwardChunk::phase_b>(use, chunk.n_b);
    }
}

}  // namespace swiglu::detail
