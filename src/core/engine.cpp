// What every engine shares: the judgement of its oneDNN kernels, and a
// worker's state.
#include "core/engine.hpp"

#include <algorithm>
#include <cstring>

namespace swiglu::detail {

bool TileEngine::tiles_back_to_back(const Phase& phase, std::int64_t unit) {
    for (std::int64_t j = 0; j + 1 < phase.columns.count; ++j) {
        const auto i = static_cast<std::size_t>(j);
        const auto* end = static_cast<const unsigned char*>(phase.tile_data[i]) +
                          phase.tiles[i].get_desc().get_size();
        if (phase.outputs(j) % unit != 0 || end != phase.tile_data[i + 1]) return false;
    }
    return true;
}

bool TileEngine::accepts(const std::vector<const MatmulKernel*>& kernels) const {
    switch (demand_) {
        case KernelDemand::any: return true;
        case KernelDemand::fast:
            // oneDNN 2.6 has bf16 matmuls only with AVX-512; elsewhere at
            // best a reference kernel, slower than f32.
            return std::none_of(kernels.begin(), kernels.end(),
                                [](const MatmulKernel* k) { return is_reference_kernel(*k); });
        case KernelDemand::vnni: {
            // The gate|up 64-row kernel speaks for the ISA oneDNN found.
            const MatmulKernel& top = *kernels.front();
            if (!is_brgemm_kernel(top))
                throw Error(Status::unsupported,
                            "Ffn: int8 needs a CPU with AVX512-VNNI (oneDNN chose " +
                                top.implementation + "); use Dtype::bf16 or Dtype::f32 here");
            return true;
        }
        case KernelDemand::amx:
            return std::all_of(kernels.begin(), kernels.end(), [](const MatmulKernel* k) {
                return is_brgemm_kernel(*k) && k->implementation.find("amx") != std::string::npos;
            });
    }
    return true;
}

TileWorker::TileWorker(const Phase& first, const Phase& second, std::size_t tile_floats,
                       std::size_t scratchpad_bytes, std::size_t staging_bytes)
    : stream(cpu_engine()), tile(tile_floats), scratchpad(scratchpad_bytes) {
    const Phase* phases[kPhases] = {&first, &second};
    for (int p = 0; p < kPhases; ++p)
        for (int t = 0; t < 2; ++t)
            for (int b = 0; b < kRowBuckets; ++b)
                if (const MatmulKernel& k = phases[p]->kernels[t][b]) binding(p, t == 1, b).bind(k);
    if (staging_bytes == 0) return;
    unpacked = AlignedBuffer<unsigned char>(staging_bytes);
    // Touched now, with the tile a whole chunk's prefill writes: the first
    // call makes all of the scratch resident whatever its token count, so
    // memory does not grow later when the first 64-row tile arrives.
    std::memset(unpacked.data(), 0, unpacked.size());
    std::fill_n(tile.data(), tile.size(), 0.0f);
    for (int p = 0; p < kPhases; ++p)
        for (int t = 0; t < 2; ++t) {
            const MatmulKernel* kernels = phases[p]->prefill[t];
            if (!kernels[0]) continue;
            unpacked_weights[p][t] =
                dnnl::memory(kernels[0].weights, cpu_engine(), unpacked.data());
            for (int h = 0; h < kMaxPrefillTiles; ++h) prefill_bindings[p][t][h].bind(kernels[h]);
        }
}

}  // namespace swiglu::detail
