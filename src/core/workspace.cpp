#include "core/workspace.hpp"

#include <algorithm>
#include <cstring>

namespace swiglu::detail {

namespace {
std::size_t elements(std::int64_t rows, std::int64_t cols) {
    return static_cast<std::size_t>(rows * cols);
}
}  // namespace

WorkerState::WorkerState(const PackedBlock& block)
    : stream(cpu_engine()),
      tile(elements(kMaxRowTile,
                    std::max(2 * block.gate_up.columns.width, block.down.columns.width))),
      scratchpad(block.scratchpad_bytes) {
    const Phase* phases[2] = {&block.gate_up, &block.down};
    for (int p = 0; p < 2; ++p)
        for (int t = 0; t < 2; ++t)
            for (int b = 0; b < kRowBuckets; ++b)
                if (phases[p]->kernels[t][b]) bindings[p][t][b].bind(phases[p]->kernels[t][b]);
}

Workspace::Workspace(const PackedBlock& block, int threads) {
    const std::int64_t d = block.d, f = block.f;
    switch (block.storage) {
        case Dtype::f32:
            act = AlignedBuffer<float>(elements(kChunkRows, f));
            // Emulated bf16 rounds the whole chunk's x; plain f32 pads one tile.
            x_lp = AlignedBuffer<unsigned char>(
                elements(block.dtype == Dtype::bf16 ? kChunkRows : kMaxRowTile, d) * 4);
            break;
        case Dtype::bf16:
            act_lp = AlignedBuffer<unsigned char>(elements(kChunkRows, f) * 2);
            x_lp = AlignedBuffer<unsigned char>(elements(kChunkRows, d) * 2);
            break;
        case Dtype::int8:
            if (!block.act_quantized_in_gate_up()) act = AlignedBuffer<float>(elements(kChunkRows, f));
            act_lp = AlignedBuffer<unsigned char>(elements(kChunkRows, f));
            x_lp = AlignedBuffer<unsigned char>(elements(kChunkRows, d));
            x_scale = AlignedBuffer<float>(kChunkRows);
            act_scale = AlignedBuffer<float>(kChunkRows);
            std::fill_n(x_scale.data(), kChunkRows, 0.0f);
            break;
    }
    std::memset(x_lp.data(), 0, x_lp.size());
    workers.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w) workers.emplace_back(block);
}

}  // namespace swiglu::detail
