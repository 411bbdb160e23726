// load_moe_layer: a checkpoint's Mixture-of-Experts layer built as it runs.
// Each expert (and the shared block) packs straight from the mapped file as
// load_ffn packs a block, one after another, so loading a layer costs its
// packed experts plus a tile, never an f32 copy of them; only the router,
// the bias and the shared gate (E x d, E and d values) are converted to f32.
// Apart from io/moe_resolution.cpp, which the readers' side could link
// without core/ (as io/load_ffn.cpp is apart from io/checkpoint.cpp).
#include <swiglu/moe_checkpoint.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include "common/messages.hpp"
#include "io/block_selection.hpp"
#include "io/checkpoint_loader.hpp"
#include "io/ffn_builder.hpp"
#include "io/moe_resolution.hpp"
#include "io/safetensors.hpp"  // quote_name

namespace swiglu {

namespace {

// The values of a small tensor, every one finite: a NaN in the router
// would leave a token no expert, found at its first call instead of here.
std::vector<float> finite_values(const detail::CheckpointFiles& files,
                                 const detail::StoredTensor& t, std::int64_t layer,
                                 const char* role) {
    std::vector<float> v = files.to_f32(t);
    for (std::size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]))
            detail::fail(files, "layer " + std::to_string(layer) + ": " + role + " " +
                                    detail::quote_name(t.name) + " holds " + std::to_string(v[i]) +
                                    " at element " + std::to_string(i) +
                                    "; its values must be finite");
    return v;
}

}  // namespace

MoeLayer load_moe_layer(const std::string& path, std::int64_t layer, const Options& options) {
    const detail::CheckpointFiles files = detail::CheckpointFiles::open(path);
    const detail::ResolvedMoe r = detail::resolve_moe_layer(files, layer);
    std::vector<Ffn> blocks;
    blocks.reserve(r.experts.size());
    for (const detail::FoundBlock& b : r.experts)
        blocks.push_back(detail::build_ffn(detail::resolve_block(files, b), options));
    std::unique_ptr<Ffn> shared;
    if (r.shared)
        shared = std::make_unique<Ffn>(
            detail::build_ffn(detail::resolve_block(files, *r.shared), options));
    const std::vector<float> router = finite_values(files, r.router, layer, "router");
    std::vector<float> bias, gate;
    if (r.bias) bias = finite_values(files, *r.bias, layer, "bias");
    if (r.shared_gate) gate = finite_values(files, *r.shared_gate, layer, "shared expert gate");
    return MoeLayer(WeightView::out_in(router.data(), r.info.experts, r.info.expert.d), r.info.rule,
                    Experts(std::move(blocks)), bias.empty() ? nullptr : bias.data(),
                    std::move(shared), gate.empty() ? nullptr : gate.data());
}

}  // namespace swiglu
