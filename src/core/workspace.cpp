#include "core/workspace.hpp"

#include <algorithm>
#include <cstring>

namespace swiglu::detail {

WorkerState::WorkerState(const PackedBlock& block)
    : stream(cpu_engine()),
      tile(static_cast<std::size_t>(
          (block.has_prefill() ? kChunkRows : kMaxRowTile) *
          std::max(2 * block.gate_up.columns.width, block.down.columns.width))),
      scratchpad(block.scratchpad_bytes) {
    for (PhaseId p : {PhaseId::gate_up, PhaseId::down})
        for (int t = 0; t < 2; ++t)
            for (int b = 0; b < kRowBuckets; ++b)
                if (const MatmulKernel& k = block.phase(p).kernels[t][b])
                    binding(p, t == 1, b).bind(k);
    if (!block.has_prefill()) return;
    std::size_t bytes = 0;
    for (PhaseId p : {PhaseId::gate_up, PhaseId::down}) {
        const Phase& phase = block.phase(p);
        for (int t = 0; t < 2; ++t)
            if (phase.prefill[t][0])
                bytes =
                    std::max(bytes, block.precision->unpacked_bytes(
                                        phase.k, phase.outputs(t ? phase.columns.count - 1 : 0)));
    }
    unpacked = AlignedBuffer<unsigned char>(bytes);
    // Touched now, with the tile a whole chunk's prefill writes: the first
    // call makes all of the scratch resident whatever its token count, so
    // memory does not grow later when the first 64-row tile arrives.
    std::memset(unpacked.data(), 0, unpacked.size());
    std::fill_n(tile.data(), tile.size(), 0.0f);
    for (PhaseId p : {PhaseId::gate_up, PhaseId::down})
        for (int t = 0; t < 2; ++t) {
            const MatmulKernel* kernels = block.phase(p).prefill[t];
            if (!kernels[0]) continue;
            const int i = static_cast<int>(p);
            unpacked_weights[i][t] =
                dnnl::memory(kernels[0].weights, cpu_engine(), unpacked.data());
            for (int h = 0; h < kMaxPrefillTiles; ++h) prefill_bindings[i][t][h].bind(kernels[h]);
        }
}

Workspace::Workspace(const PackedBlock& block, int threads) {
    const ScratchSizes sizes = block.precision->scratch();
    act = AlignedBuffer<float>(sizes.act_floats);
    act_src = AlignedBuffer<unsigned char>(sizes.act_src_bytes);
    x_src = AlignedBuffer<unsigned char>(sizes.x_src_bytes);
    x_prefill = AlignedBuffer<unsigned char>(sizes.x_prefill_bytes);
    if (x_prefill.size() != 0) std::memset(x_prefill.data(), 0, x_prefill.size());
    x_scale = AlignedBuffer<float>(sizes.row_scales);
    act_scale = AlignedBuffer<float>(sizes.row_scales);
    if (x_src.size() != 0) std::memset(x_src.data(), 0, x_src.size());
    std::fill_n(x_scale.data(), x_scale.size(), 0.0f);
    workers.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w) workers.emplace_back(block);
}

}  // namespace swiglu::detail
