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

// Routed experts [first, end) of the layer (all: first < 0), the shared
// block where `with_shared`: what load_moe_layer and load_moe_layer_part build.
MoeLayer load_layer(const std::string& path, std::int64_t layer, std::int64_t first,
                    std::int64_t end, bool with_shared, const Options& options) {
    const detail::CheckpointFiles files = detail::CheckpointFiles::open(path);
    const detail::ResolvedMoe r = detail::resolve_moe_layer(files, layer);
    const auto experts = static_cast<std::int64_t>(r.experts.size());
    const bool part = first >= 0;
    if (!part) {
        first = 0;
        end = experts;
    } else if (end <= first || end > experts) {
        detail::invalid("load_moe_layer_part: experts [" + std::to_string(first) + ", " +
                        std::to_string(end) + ") of layer " + std::to_string(layer) +
                        " must be a non-empty range within its E = " + std::to_string(experts));
    }
    std::vector<Ffn> blocks;
    blocks.reserve(static_cast<std::size_t>(end - first));
    for (std::int64_t e = first; e < end; ++e)
        blocks.push_back(detail::build_ffn(
            detail::resolve_block(files, r.experts[static_cast<std::size_t>(e)]), options));
    std::unique_ptr<Ffn> shared;
    if (r.shared && with_shared)
        shared = std::make_unique<Ffn>(
            detail::build_ffn(detail::resolve_block(files, *r.shared), options));
    const std::vector<float> router = finite_values(files, r.router, layer, "router");
    std::vector<float> bias, gate;
    if (r.bias) bias = finite_values(files, *r.bias, layer, "bias");
    if (r.shared_gate && shared)
        gate = finite_values(files, *r.shared_gate, layer, "shared expert gate");
    const WeightView view = WeightView::out_in(router.data(), r.info.experts, r.info.expert.d);
    const float* b = bias.empty() ? nullptr : bias.data();
    const float* g = gate.empty() ? nullptr : gate.data();
    if (!part)
        return MoeLayer(view, r.info.rule, Experts(std::move(blocks)), b, std::move(shared), g);
    return MoeLayer::part(view, r.info.rule, Experts(std::move(blocks)), first, b,
                          std::move(shared), g);
}

}  // namespace

MoeLayer load_moe_layer(const std::string& path, std::int64_t layer, const Options& options) {
    return load_layer(path, layer, -1, -1, true, options);
}

MoeLayer load_moe_layer_part(const std::string& path, std::int64_t layer, std::int64_t first,
                             std::int64_t end, bool with_shared, const Options& options) {
    if (first < 0)
        detail::invalid("load_moe_layer_part: first must be >= 0 (got " + std::to_string(first) +
                        ")");
    return load_layer(path, layer, first, end, with_shared, options);
}

}  // namespace swiglu
