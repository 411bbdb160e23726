// The oneDNN engine: oneDNN's matmul kernels, one per row height and tile
// width, on weight tiles in the layout its 64-row kernel picks.
#include <cstring>

#include "core/engine.hpp"

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

// The 64-row kernel with the packed weight layout oneDNN picks, except for
// f32 weights that stream from DRAM: oneDNN 2.6's brgemm picks 64-column
// blocks (BA16a64b) but streams 32-column blocks (BA16a32b) faster at a
// decode's few rows; weights that stay in cache keep 64, where 32 computes
// slower. (docs/measurements.md, "f32 weight blocks".)
MatmulKernel make_top_kernel(std::int64_t k, std::int64_t n, const MatmulTypes& types,
                             bool streamed) {
    MatmulKernel chosen = make_matmul(kMaxRowTile, k, n, nullptr, types);
    using tag = dnnl::memory::format_tag;
    if (!streamed || types.weights != dt::f32 ||
        chosen.weights != dnnl::memory::desc({k, n}, dt::f32, tag::BA16a64b))
        return chosen;
    const dnnl::memory::desc narrow({k, n}, dt::f32, tag::BA16a32b);
    try {
        MatmulKernel alternative = make_matmul(kMaxRowTile, k, n, &narrow, types);
        if (alternative.implementation == chosen.implementation) return alternative;
    } catch (const Error&) {
        // Not offered for this shape: keep oneDNN's choice.
    }
    return chosen;
}

// The kernels of `phase` for every row height from 1 << min_bucket to 64
// and both tile widths; the 64-row kernel picks the packed weight layout,
// the others must share it.
void make_phase_kernels(Phase& phase, int min_bucket, const MatmulTypes& types, bool streamed) {
    for (auto& row : phase.kernels)
        for (MatmulKernel& k : row) k = MatmulKernel{};
    const std::int64_t widths[2] = {phase.columns.width, phase.columns.tail};
    for (int tail = 0; tail < 2; ++tail) {
        if (tail == 1 && phase.columns.tail == phase.columns.width) break;
        const std::int64_t n = widths[tail] * phase.outputs_per_column;
        MatmulKernel& top = phase.kernels[tail][kRowBuckets - 1];
        top = make_top_kernel(phase.k, n, types, streamed);
        for (int b = min_bucket; b + 1 < kRowBuckets; ++b)
            phase.kernels[tail][b] =
                make_matmul(std::int64_t{1} << b, phase.k, n, &top.weights, types);
    }
}

class OnednnEngine final : public TileEngine {
public:
    OnednnEngine(const MatmulTypes& types, EngineGeometry geometry, KernelDemand demand,
                 std::string note)
        : TileEngine(EngineKind::onednn, geometry, 0, std::move(note)), types_(types) {
        demand_ = demand;
    }

    void make_kernels(Phase& first, Phase& second, int min_bucket, bool streamed) override {
        for (Phase* p : {&first, &second}) make_phase_kernels(*p, min_bucket, types_, streamed);
    }
    dnnl::memory::desc tile_layout(const Phase& phase, std::int64_t tile) const override {
        return phase.kernel(tile, kRowBuckets - 1).weights;
    }
    // oneDNN's reorder packs, and rounds f32 to bf16 (nearest even) when
    // the packed layout is bf16.
    void pack(const Phase&, const PlainWeights& plain, std::int64_t k, std::int64_t n,
              const dnnl::memory& to) override {
        reorder(plain.data, dnnl::memory::desc({k, n}, plain.type, {n, 1}), to);
    }
    bool unpack_f32(const dnnl::memory& tile, std::int64_t k, std::int64_t n,
                    float* plain) const override {
        if (types_.weights != dt::f32) return false;
        reorder(tile.get_data_handle(), tile.get_desc(),
                dnnl::memory({{k, n}, dt::f32, {n, 1}}, cpu_engine(), plain));
        return true;
    }
    // Into the result where it is the kernel's dense tile; else into the
    // worker's tile, whose valid rows are copied out. A padded tile writes
    // all its height's rows: straight only into the worker's own tile (the
    // forward's), never past the valid rows of a caller's buffer (dx).
    void run(const Phase& phase, const TileJob& job, TileWorker& w) const override {
        const RowTile& t = *job.rows;
        const std::int64_t n = phase.outputs(job.tile);
        const bool dense = job.result_stride == n && (!t.padded() || job.result == w.tile.data());
        float* out = dense ? job.result : w.tile.data();
        execute(phase.kernel(job.tile, t.bucket),
                w.binding(job.phase, phase.columns.is_tail(job.tile), t.bucket), w.stream,
                phase.tiles[static_cast<std::size_t>(job.tile)], job.src, out, w.scratchpad.data());
        if (!dense)
            for (std::int64_t r = 0; r < t.rows; ++r)
                std::memcpy(job.result + r * job.result_stride, out + r * n,
                            static_cast<std::size_t>(n) * sizeof(float));
    }

private:
    MatmulTypes types_;
};

}  // namespace

std::unique_ptr<TileEngine> make_onednn_engine(const MatmulTypes& types, EngineGeometry geometry,
                                               KernelDemand demand, std::string note) {
    return std::make_unique<OnednnEngine>(types, geometry, demand, std::move(note));
}

}  // namespace swiglu::detail
