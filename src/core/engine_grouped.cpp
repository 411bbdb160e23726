// The grouped engine: q8_0 / q4_0 records on our grouped kernels
// (kernels/grouped_gemm.hpp), every row tile, valid rows only, reading the
// rows' inputs as ActBlocks (x and act quantised per block of 32:
// core/precision_grouped.cpp).
#include <cstring>

#include "core/engine.hpp"
#include "formats/format_table.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

namespace {

class GroupedEngine final : public TileEngine {
public:
    explicit GroupedEngine(Dtype dtype)
        : TileEngine(
              EngineKind::grouped,
              // Tiles are cut as for f32 weights: ~1 MiB of those, a
              // few hundred KiB of ours, so a decode has enough tasks
              // to keep many cores busy to the end of each phase
              // (llama7b's down phase: 64 tiles, not 21). One row
              // streams a group's records as fast as four
              // (grouped_gemm_<isa>.cpp).
              {double(record_bytes(traits(dtype).grouped)) / double(kGroupColumns * kGgmlBlock), 4,
               true},
              kMaxRowTile, std::string(dtype_name(dtype)) + ":" + isa_name(grouped_kernels_isa())),
          stored_(traits(dtype).format),
          format_(traits(dtype).grouped),
          gemm_(grouped_kernels()[format_].gemm) {}

    dnnl::memory::desc tile_layout(const Phase& phase, std::int64_t tile) const override {
        const auto bytes = static_cast<dnnl::memory::dim>(
            grouped_tile_bytes(format_, phase.k, phase.outputs(tile)));
        return dnnl::memory::desc({bytes}, dnnl::memory::data_type::u8,
                                  dnnl::memory::format_tag::a);
    }
    void pack(const PlainWeights& plain, std::int64_t k, std::int64_t n,
              const dnnl::memory& to) override {
        pack_grouped_tile(format_, static_cast<const float*>(plain.data), k, n,
                          static_cast<std::uint8_t*>(to.get_data_handle()));
    }
    // GGUF blocks of this format are placed as the file stores them: no
    // decoding, no quantising again (which would change blocks that ggml's
    // reference rounding did not make, e.g. with an importance matrix). A
    // window of the rows (a tensor-parallel shard) qualifies when it starts
    // and ends on a block (stored rows are whole blocks: check_view).
    bool pack_stored(const WeightSource* const* sources, int count, std::int64_t c0,
                     std::int64_t width, std::int64_t k, const dnnl::memory& to) override {
        const std::int64_t block = traits(stored_).block;
        for (int s = 0; s < count; ++s) {
            const WeightSource& w = *sources[s];
            const bool whole_blocks = w.first_col % block == 0 && k % block == 0;
            if (w.type != stored_ || w.layout != Layout::out_in || !whole_blocks) return false;
        }
        auto* tile = static_cast<std::uint8_t*>(to.get_data_handle());
        std::memset(tile, 0, grouped_tile_bytes(format_, k, count * width));
        for (int s = 0; s < count; ++s)
            for (std::int64_t j = 0; j < width; ++j) {
                const WeightSource& w = *sources[s];
                const unsigned char* row =
                    source_row(w, c0 + j) + source_row_bytes(w.type, w.first_col);
                place_stored_column(format_, row, k, s * width + j, tile);
            }
        return true;
    }
    // The rows' inputs are ActBlocks, ggml_blocks(k) per row.
    void run(const Phase& phase, const TileJob& job, TileWorker&) const override {
        const auto stride =
            static_cast<std::int64_t>(ggml_blocks(static_cast<std::size_t>(phase.k)));
        gemm_(static_cast<const std::uint8_t*>(phase.tile_data[static_cast<std::size_t>(job.tile)]),
              phase.k, phase.outputs(job.tile), static_cast<const ActBlock*>(job.src), stride,
              job.rows->rows, job.result, job.result_stride);
    }

private:
    Format stored_;  // the format whose stored blocks pack unchanged
    GroupedFormat format_;
    GroupedGemm gemm_;
};

}  // namespace

std::unique_ptr<TileEngine> make_grouped_engine(Dtype dtype) {
    return std::make_unique<GroupedEngine>(dtype);
}

}  // namespace swiglu::detail
