// The grouped engine: GGUF's block formats on our own kernels, every row
// tile, valid rows only: q8_0 / q4_0 records on the grouped kernels
// (kernels/grouped_gemm.hpp) reading ActBlocks, q4_k / q5_k / q6_k records
// on the K-quant kernels (kernels/kquant_gemm.hpp) reading ActBlockKs (x and
// act quantised per block: core/precision_grouped.cpp). Each phase has its
// own format (a Q4_K_M block: gate|up q4_k, down q6_k).
#include <algorithm>
#include <cstring>

#include "core/engine.hpp"
#include "formats/format_table.hpp"
#include "kernels/grouped_gemm.hpp"
#include "kernels/grouped_layout.hpp"
#include "kernels/kquant_gemm.hpp"

namespace swiglu::detail {

namespace {

// One phase's format and kernel.
struct PhaseFormat {
    explicit PhaseFormat(Dtype dtype)
        : stored(traits(dtype).format),
          format(traits(dtype).grouped),
          blocks_gemm(is_k_format(format) ? nullptr : grouped_kernels()[format].gemm),
          k_gemm(is_k_format(format) ? kquant_kernels()[format] : nullptr) {}

    Format stored;  // the format whose stored blocks pack unchanged
    GroupedFormat format;
    GroupedGemm blocks_gemm;  // q8_0, q4_0
    KQuantGemm k_gemm;        // the K-quants
};

double bytes_per_weight(GroupedFormat format) {
    return double(record_bytes(format)) / double(kGroupColumns * block_inputs(format));
}

// "q4_k:avx512_vnni", or "q4_k:avx512_vnni + q6_k:avx512_vnni" for two formats.
std::string describe(Dtype gate_up, Dtype down) {
    auto one = [](Dtype dtype) {
        const bool k = is_k_format(traits(dtype).grouped);
        return std::string(dtype_name(dtype)) + ":" +
               isa_name(k ? kquant_kernels_isa() : grouped_kernels_isa());
    };
    return gate_up == down ? one(gate_up) : one(gate_up) + " + " + one(down);
}

class GroupedEngine final : public TileEngine {
public:
    GroupedEngine(Dtype gate_up, Dtype down)
        : TileEngine(EngineKind::grouped,
                     // Tiles are cut as for f32 weights: ~1 MiB of those, a
                     // few hundred KiB of ours, so a decode has enough tasks
                     // to keep many cores busy to the end of each phase
                     // (llama7b's down phase: 64 tiles, not 21); where fewer
                     // threads share a phase, one call runs several
                     // (joins_tiles, tiling.hpp's joined_tiles). One row
                     // streams a group's records as fast as four
                     // (grouped_gemm_<isa>.cpp). Act is quantised in the
                     // gate|up tile, so its tiles are whole blocks of down's
                     // activations wide.
                     {(2 * bytes_per_weight(traits(gate_up).grouped) +
                       bytes_per_weight(traits(down).grouped)) /
                          3,
                      4, true, std::max<std::int64_t>(64, block_inputs(traits(down).grouped))},
                     kMaxRowTile, describe(gate_up, down)),
          phases_{PhaseFormat(gate_up), PhaseFormat(down)} {}

    dnnl::memory::desc tile_layout(const Phase& phase, std::int64_t tile) const override {
        const auto bytes = static_cast<dnnl::memory::dim>(
            grouped_tile_bytes(of(phase).format, phase.k, phase.outputs(tile)));
        return dnnl::memory::desc({bytes}, dnnl::memory::data_type::u8,
                                  dnnl::memory::format_tag::a);
    }
    void pack(const Phase& phase, const PlainWeights& plain, std::int64_t k, std::int64_t n,
              const dnnl::memory& to) override {
        pack_grouped_tile(of(phase).format, static_cast<const float*>(plain.data), k, n,
                          static_cast<std::uint8_t*>(to.get_data_handle()));
    }
    // GGUF blocks of the phase's format are placed as the file stores them:
    // no decoding, no quantising again (which would change blocks that
    // ggml's reference rounding did not make, e.g. with an importance
    // matrix). A window of the rows (a tensor-parallel shard) qualifies when
    // it starts and ends on a block (stored rows are whole blocks: check_view).
    bool pack_stored(const Phase& phase, const WeightSource* const* sources, int count,
                     std::int64_t c0, std::int64_t width, std::int64_t k,
                     const dnnl::memory& to) override {
        const PhaseFormat& p = of(phase);
        const std::int64_t block = traits(p.stored).block;
        for (int s = 0; s < count; ++s) {
            const WeightSource& w = *sources[s];
            const bool whole_blocks = w.first_col % block == 0 && k % block == 0;
            if (w.type != p.stored || w.layout != Layout::out_in || !whole_blocks) return false;
        }
        auto* tile = static_cast<std::uint8_t*>(to.get_data_handle());
        std::memset(tile, 0, grouped_tile_bytes(p.format, k, count * width));
        for (int s = 0; s < count; ++s)
            for (std::int64_t j = 0; j < width; ++j) {
                const WeightSource& w = *sources[s];
                const unsigned char* row =
                    source_row(w, c0 + j) + source_row_bytes(w.type, w.first_col);
                place_stored_column(p.format, row, k, s * width + j, tile);
            }
        return true;
    }
    // The rows' inputs are the format's activation blocks, format_blocks(k) per row.
    void run(const Phase& phase, const TileJob& job, TileWorker&) const override {
        const PhaseFormat& p = of(phase);
        const std::int64_t stride = format_blocks(p.format, phase.k);
        const auto* tile =
            static_cast<const std::uint8_t*>(phase.tile_data[static_cast<std::size_t>(job.tile)]);
        const std::int64_t n = phase.outputs(job.tile, job.tiles);
        if (p.k_gemm)
            p.k_gemm(tile, phase.k, n, static_cast<const ActBlockK*>(job.src), stride,
                     job.rows->rows, job.result, job.result_stride);
        else
            p.blocks_gemm(tile, phase.k, n, static_cast<const ActBlock*>(job.src), stride,
                          job.rows->rows, job.result, job.result_stride);
    }
    // A tile is its column groups' record streams one after another, so
    // tiles of whole groups packed back to back are one wider tile.
    bool joins_tiles(const Phase& phase) const override {
        return tiles_back_to_back(phase, kGroupColumns);
    }

private:
    const PhaseFormat& of(const Phase& phase) const { return phases_[static_cast<int>(phase.id)]; }

    PhaseFormat phases_[kPhases];
};

}  // namespace

std::unique_ptr<TileEngine> make_grouped_engine(Dtype gate_up, Dtype down) {
    return std::make_unique<GroupedEngine>(gate_up, down);
}

}  // namespace swiglu::detail
