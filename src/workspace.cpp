#include "workspace.hpp"

#include <algorithm>

namespace swiglu::detail {

WorkerState::WorkerState(const PackedBlock& block)
    : stream(cpu_engine()),
      tile(static_cast<std::size_t>(
          kMaxRowTile * std::max(2 * block.gate_up.columns.width, block.down.columns.width))),
      scratchpad(block.scratchpad_bytes) {
    const Phase* phases[2] = {&block.gate_up, &block.down};
    for (int p = 0; p < 2; ++p)
        for (int t = 0; t < 2; ++t)
            for (int b = 0; b < kRowBuckets; ++b)
                if (phases[p]->kernels[t][b]) bindings[p][t][b].bind(phases[p]->kernels[t][b]);
}

Workspace::Workspace(const PackedBlock& block, int threads)
    : act(static_cast<std::size_t>(kChunkRows * block.f)),
      x_pad(static_cast<std::size_t>(kMaxRowTile * block.d)) {
    // Rows past the valid ones in a padded tile are computed and thrown
    // away; zero them once so they never hold uninitialised memory.
    std::fill_n(x_pad.data(), x_pad.size(), 0.0f);
    workers.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w) workers.emplace_back(block);
}

}  // namespace swiglu::detail
