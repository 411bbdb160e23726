// The prefill engine: the grouped engine, except that full-height row tiles
// (64 rows) run oneDNN's 64-row kernel on a weight tile unpacked once for
// all of a task's full-height tiles (f32 or bf16: what the records hold is
// exact in f32, q * d); the rows' inputs are then x and act as f32 or bf16
// (core/precision_grouped.cpp). When it pays: core/precision_grouped.cpp.
#include <algorithm>

#include "core/engine.hpp"
#include "formats/format_table.hpp"
#include "kernels/convert.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

namespace {

using dt = dnnl::memory::data_type;

class PrefillEngine final : public TileEngine {
public:
    PrefillEngine(Dtype dtype, const MatmulTypes& types, KernelDemand demand)
        : TileEngine(EngineKind::prefill, {}, kMaxRowTile, {}),
          grouped_(make_grouped_engine(dtype, dtype)),
          unpack_(grouped_kernels()[traits(dtype).grouped].unpack),
          types_(types) {
        geometry_ = grouped_->geometry();
        // The unpacked tile stays in L2.
        geometry_.tile_bytes_per_weight = double(element_bytes());
        demand_ = demand;
        note_ = grouped_->note() + " (64-row tiles: unpacked to " + (bf16() ? "bf16" : "f32") +
                " for the kernel named)";
    }

    // oneDNN's kernels of (i + 1) 64-row tiles on plain weights, per phase
    // and tile width; the staging each worker needs for the widest tile.
    void make_kernels(Phase& first, Phase& second, int, bool) override {
        staging_bytes_ = 0;
        for (Phase* p : {&first, &second})
            for (int tail = 0; tail < 2; ++tail) {
                if (tail == 1 && p->columns.tail == p->columns.width) break;
                const std::int64_t n =
                    (tail ? p->columns.tail : p->columns.width) * p->outputs_per_column;
                const dnnl::memory::desc plain({p->k, n}, types_.weights,
                                               dnnl::memory::format_tag::ab);
                for (int i = 0; i < kMaxPrefillTiles; ++i)
                    p->prefill[tail][i] =
                        make_matmul((i + 1) * kMaxRowTile, p->k, n, &plain, types_);
                staging_bytes_ = std::max(staging_bytes_, unpacked_bytes(p->k, n));
            }
    }
    dnnl::memory::desc tile_layout(const Phase& phase, std::int64_t tile) const override {
        return grouped_->tile_layout(phase, tile);
    }
    void pack(const Phase& phase, const PlainWeights& plain, std::int64_t k, std::int64_t n,
              const dnnl::memory& to) override {
        grouped_->pack(phase, plain, k, n, to);
    }
    bool pack_stored(const Phase& phase, const WeightSource* const* sources, int count,
                     std::int64_t c0, std::int64_t width, std::int64_t k,
                     const dnnl::memory& to) override {
        return grouped_->pack_stored(phase, sources, count, c0, width, k, to);
    }
    void run(const Phase& phase, const TileJob& job, TileWorker& w) const override {
        if (job.rows->bucket != kRowBuckets - 1) return grouped_->run(phase, job, w);
        const int t = phase.columns.is_tail(job.tile) ? 1 : 0, h = job.row_tiles - 1;
        unpack_tile(phase.tile_data[static_cast<std::size_t>(job.tile)], phase.k,
                    phase.outputs(job.tile), w.unpacked.data());
        execute(phase.prefill[t][h], w.prefill_bindings[job.phase][t][h], w.stream,
                w.unpacked_weights[job.phase][t], job.src, job.result, w.scratchpad.data());
    }

private:
    bool bf16() const { return types_.weights == dt::bf16; }
    std::size_t element_bytes() const { return bf16() ? 2 : 4; }
    // Bytes to unpack a (k x n) tile into: bf16, the tile then one block
    // row of f32 to convert from.
    std::size_t unpacked_bytes(std::int64_t k, std::int64_t n) const {
        const auto values = static_cast<std::size_t>(k * n);
        return bf16() ? values * 2 + static_cast<std::size_t>(kGgmlBlock * n) * sizeof(float)
                      : values * sizeof(float);
    }
    void unpack_tile(const void* tile, std::int64_t k, std::int64_t n, void* out) const {
        const auto* packed = static_cast<const std::uint8_t*>(tile);
        auto* f32 = static_cast<float*>(out);
        auto* halves = static_cast<std::uint16_t*>(out);
        float* staging = reinterpret_cast<float*>(halves + k * n);
        const auto block = static_cast<std::int64_t>(kGgmlBlock);
        for (std::int64_t b = 0; b * block < k; ++b) {
            if (!bf16()) {
                unpack_(packed, k, n, b, f32 + b * block * n, n);
                continue;
            }
            unpack_(packed, k, n, b, staging, n);
            const std::int64_t rows = std::min(block, k - b * block);
            to_bf16(staging, halves + b * block * n, static_cast<std::size_t>(rows * n));
        }
    }

    std::unique_ptr<TileEngine> grouped_;
    GroupedUnpack unpack_;
    MatmulTypes types_;
};

}  // namespace

std::unique_ptr<TileEngine> make_prefill_engine(Dtype dtype, const MatmulTypes& types,
                                                KernelDemand demand) {
    return std::make_unique<PrefillEngine>(dtype, types, demand);
}

}  // namespace swiglu::detail
