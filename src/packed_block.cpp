#include "packed_block.hpp"

#include <set>

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

// Columns [col0, col0 + width) of W as x @ W sees it: a (in x width) view of
// the caller's buffer, whatever its layout.
struct Slice {
    const float* data;
    dnnl::memory::desc md;
};

Slice slice(const WeightView& w, std::int64_t col0, std::int64_t width) {
    const std::int64_t in = w.in_features();
    const std::int64_t out = w.out_features();
    if (w.layout == Layout::out_in)  // (out, in): column c of x @ W is row c
        return {w.data + col0 * in, dnnl::memory::desc({in, width}, dt::f32, {1, in})};
    return {w.data + col0, dnnl::memory::desc({in, width}, dt::f32, {out, 1})};
}

// Creates the kernels of `phase` for every row height and tile width; the
// 64-row kernel picks the packed weight layout, the others must share it.
void make_kernels(Phase& phase, int min_bucket) {
    const std::int64_t widths[2] = {phase.columns.width, phase.columns.tail};
    for (int tail = 0; tail < 2; ++tail) {
        if (tail == 1 && phase.columns.tail == phase.columns.width) break;
        const std::int64_t n = widths[tail] * phase.outputs_per_column;
        MatmulKernel& top = phase.kernels[tail][kRowBuckets - 1];
        top = make_matmul(kMaxRowTile, phase.k, n, nullptr);
        for (int b = min_bucket; b + 1 < kRowBuckets; ++b)
            phase.kernels[tail][b] =
                make_matmul(std::int64_t{1} << b, phase.k, n, &top.weights);
    }
}

// A packed tile's size, rounded up to a cache line.
std::size_t tile_bytes(const Phase& phase, std::int64_t tile) {
    return (phase.kernel(tile, kRowBuckets - 1).weights.get_size() + 63) / 64 * 64;
}

}  // namespace

PackedBlock::PackedBlock(const WeightView& gate_w, const WeightView& up_w,
                         const WeightView& down_w)
    : d(gate_w.in_features()), f(gate_w.out_features()) {
    // Tile sizes: gate|up tiles read 2 weights of d floats per column, down
    // tiles f floats per column.
    gate_up.k = d;
    gate_up.outputs_per_column = 2;
    gate_up.columns = plan_columns(f, 2 * d * std::int64_t{sizeof(float)});
    down.k = f;
    down.columns = plan_columns(d, f * std::int64_t{sizeof(float)});

    min_bucket = min_row_bucket(3 * d * f * std::int64_t{sizeof(float)});
    make_kernels(gate_up, min_bucket);
    make_kernels(down, min_bucket);

    // Every packed tile in one arena, in the order the tasks read them.
    std::size_t total = 0;
    for (const Phase* p : {&gate_up, &down})
        for (std::int64_t j = 0; j < p->columns.count; ++j)
            total += tile_bytes(*p, j);
    arena = WeightArena(total);
    std::size_t offset = 0;
    auto next_tile = [&](Phase& p, std::int64_t j) -> dnnl::memory& {
        p.tiles.emplace_back(p.kernel(j, kRowBuckets - 1).weights, cpu_engine(),
                             arena.data() + offset);
        offset += tile_bytes(p, j);
        return p.tiles.back();
    };

    for (std::int64_t j = 0; j < gate_up.columns.count; ++j) {
        const std::int64_t c0 = gate_up.columns.begin(j);
        const std::int64_t w = gate_up.columns.size(j);
        // [gate | up] side by side in a plain (d x 2w) matrix, then packed.
        dnnl::memory merged(dnnl::memory::desc({d, 2 * w}, dt::f32, {2 * w, 1}), cpu_engine());
        auto* m = static_cast<float*>(merged.get_data_handle());
        const Slice g = slice(gate_w, c0, w), u = slice(up_w, c0, w);
        reorder(g.data, g.md, dnnl::memory(merged.get_desc().submemory_desc({d, w}, {0, 0}),
                                           cpu_engine(), m));
        reorder(u.data, u.md, dnnl::memory(merged.get_desc().submemory_desc({d, w}, {0, w}),
                                           cpu_engine(), m));
        reorder(m, merged.get_desc(), next_tile(gate_up, j));
    }
    for (std::int64_t j = 0; j < down.columns.count; ++j) {
        const Slice s = slice(down_w, down.columns.begin(j), down.columns.size(j));
        reorder(s.data, s.md, next_tile(down, j));
    }

    std::set<std::string> impls;
    for (const Phase* p : {&gate_up, &down})
        for (const auto& row : p->kernels)
            for (const MatmulKernel& k : row)
                if (k) {
                    impls.insert(k.implementation);
                    if (k.scratchpad_bytes > scratchpad_bytes) scratchpad_bytes = k.scratchpad_bytes;
                }
    for (const std::string& name : impls)
        implementation += (implementation.empty() ? "" : ",") + name;
}

}  // namespace swiglu::detail
