// Loading a whole Mixture-of-Experts layer from a checkpoint: its router,
// its routed experts, and its shared experts where the model has them, with
// the routing rule the model defines (docs/checkpoints.md, "Mixture-of-
// Experts layers").
//
// Hugging Face safetensors (one file, or sharded with an index): the layer's
// tensors by the model family's names, the rule from the config.json beside
// the weights (model_type, the expert counts, norm_topk_prob, DeepSeek's
// groups, scoring and scaling). GGUF: the stacked experts and the router by
// llama.cpp's names, the rule from the file's metadata
// (<general.architecture>.expert_used_count, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/moe.hpp>

namespace swiglu {

// What a Mixture-of-Experts layer of a checkpoint holds, as load_moe_layer
// would load it (no values read).
struct SWIGLU_API MoeInfo {
    std::int64_t layer = -1;
    // The model family: config.json's model_type ("mixtral", "qwen2_moe",
    // "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3") or the GGUF file's
    // general.architecture ("llama", "qwen2moe", "qwen3moe", "olmoe", "deepseek2").
    std::string model;
    // Where the rule was read: the config.json's path, or "GGUF metadata".
    std::string config;
    std::int64_t experts = 0;   // E
    RouterRule rule;            // k = rule.top_k
    std::string router_name;    // e.g. "model.layers.3.mlp.gate.weight", (E, d)
    std::string router_format;  // as the file stores it: "BF16", "F32", "F16"
    // DeepSeek-V3's selection bias (e_score_correction_bias, GGUF's
    // exp_probs_b), E floats; "" where the layer has none.
    std::string bias_name;
    // Expert 0, as describe_block gives it: scheme, names, d, f, stored
    // formats, the import note (every expert has its shape: checked).
    BlockInfo expert;
    // "model.layers.3.mlp.experts.{E}." or GGUF's "blk.3.ffn_*_exps.".
    std::string experts_pattern;
    // Each stored format of the routed experts, or "mixed (...)" where
    // experts differ (each then runs as its own are).
    std::string experts_dtype;
    // The shared block every token runs through (Qwen2-MoE's shared_expert,
    // DeepSeek's shared_experts: n_shared experts of f as one block of
    // n_shared * f), where has_shared.
    bool has_shared = false;
    BlockInfo shared;
    std::int64_t shared_experts = 0;  // the config's n_shared_experts, 1 for Qwen2-MoE; 0: none
    // Qwen2-MoE's shared_expert_gate ((1, d); GGUF: ffn_gate_inp_shexp, [d]):
    // the shared block's output is scaled by sigmoid(x . gate); "" for none.
    std::string shared_gate_name;
};

// Whether layer `layer` of the checkpoint at `path` holds routed experts
// (names only: neither the router nor the config is looked at, so a layer
// that would not load still is one). Throws swiglu::Error for a malformed file.
SWIGLU_API bool is_moe_layer(const std::string& path, std::int64_t layer);
// Every layer that holds routed experts, in ascending order.
SWIGLU_API std::vector<std::int64_t> moe_layers(const std::string& path);

// The layer, checked (the router, every expert 0 .. E-1 and their shapes,
// the bias and the shared block, against each other and the config) without
// reading values. Throws swiglu::Error(invalid_argument) naming the file,
// and the tensor or the config key (and the config's path) that is missing
// or disagrees: a layer without experts, a missing router, E of the router
// and of the experts that differ, a missing config.json or an unknown
// model_type / architecture, a bad k or group count.
SWIGLU_API MoeInfo describe_moe_layer(const std::string& path, std::int64_t layer);

// The layer, ready to run: each expert an Ffn packed straight from the
// mapped file as load_ffn packs a block (no f32 copy of the experts; with
// options.keep_stored each expert's weights run in their stored formats
// where a block runs them), the shared block likewise, the router (and the
// bias, the shared gate) converted to f32. Every block is built with
// `options` (threads: the layer's). Throws as describe_moe_layer, and as
// Ffn for bad options.
SWIGLU_API MoeLayer load_moe_layer(const std::string& path, std::int64_t layer,
                                   const Options& options = {});

// A part of the layer, for expert parallelism (MoeLayer::part): the whole
// router (and bias), routed experts [first, end) only, and the shared block
// (and its gate) where `with_shared` and the layer has one. The other
// experts' bytes of the mapped file are never read. Throws as
// load_moe_layer, and invalid_argument for a range that is empty or not
// within [0, E).
SWIGLU_API MoeLayer load_moe_layer_part(const std::string& path, std::int64_t layer,
                                        std::int64_t first, std::int64_t end, bool with_shared,
                                        const Options& options = {});

}  // namespace swiglu
