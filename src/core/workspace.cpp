#include "core/workspace.hpp"

#include <algorithm>
#include <cstring>

namespace swiglu::detail {

WorkerState::WorkerState(const PackedBlock& block)
    : stream(cpu_engine()),
      tile(static_cast<std::size_t>(
          kMaxRowTile * std::max(2 * block.gate_up.columns.width, block.down.columns.width))),
      scratchpad(block.scratchpad_bytes) {
    for (PhaseId p : {PhaseId::gate_up, PhaseId::down})
        for (int t = 0; t < 2; ++t)
            for (int b = 0; b < kRowBuckets; ++b)
                if (const MatmulKernel& k = block.phase(p).kernels[t][b])
                    binding(p, t == 1, b).bind(k);
}

Workspace::Workspace(const PackedBlock& block, int threads) {
    const ScratchSizes sizes = block.precision->scratch();
    act = AlignedBuffer<float>(sizes.act_floats);
    act_src = AlignedBuffer<unsigned char>(sizes.act_src_bytes);
    x_src = AlignedBuffer<unsigned char>(sizes.x_src_bytes);
    x_scale = AlignedBuffer<float>(sizes.row_scales);
    act_scale = AlignedBuffer<float>(sizes.row_scales);
    if (x_src.size() != 0) std::memset(x_src.data(), 0, x_src.size());
    std::fill_n(x_scale.data(), x_scale.size(), 0.0f);
    workers.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w) workers.emplace_back(block);
}

}  // namespace swiglu::detail
