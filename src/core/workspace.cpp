#include "core/workspace.hpp"

#include <algorithm>
#include <cstring>

namespace swiglu::detail {

Workspace::Workspace(const PackedBlock& block, int threads) {
    const ScratchSizes sizes = block.numerics->scratch();
    act = AlignedBuffer<float>(sizes.act_floats);
    // Defined once: an engine that computes a padded tile's valid rows only
    // (prefill) leaves its padding rows of act unwritten, and oneDNN's
    // full-height down kernel still reads them (their results are dropped).
    std::fill_n(act.data(), act.size(), 0.0f);
    act_src = AlignedBuffer<unsigned char>(sizes.act_src_bytes);
    x_src = AlignedBuffer<unsigned char>(sizes.x_src_bytes);
    x_prefill = AlignedBuffer<unsigned char>(sizes.x_prefill_bytes);
    if (x_prefill.size() != 0) std::memset(x_prefill.data(), 0, x_prefill.size());
    x_scale = AlignedBuffer<float>(sizes.row_scales);
    act_scale = AlignedBuffer<float>(sizes.row_scales);
    if (x_src.size() != 0) std::memset(x_src.data(), 0, x_src.size());
    std::fill_n(x_scale.data(), x_scale.size(), 0.0f);
    // A batching engine's task writes a whole chunk's full-height tiles.
    const auto tile_floats = static_cast<std::size_t>(
        (block.engine->batches_full_tiles() ? kChunkRows : kMaxRowTile) *
        std::max(2 * block.gate_up.columns.width, block.down.columns.width));
    workers.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w)
        workers.emplace_back(block.gate_up, block.down, tile_floats, block.scratchpad_bytes,
                             block.engine->staging_bytes());
}

}  // namespace swiglu::detail
