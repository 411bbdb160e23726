// A Mixture-of-Experts layer's routing rule as a model family defines it,
// read from what the checkpoint says of the model: a Hugging Face
// config.json (model_type and its keys), or a GGUF file's metadata
// (general.architecture and <arch>.expert_*, as llama.cpp reads them).
//
// Strict: a key the rule needs that is missing or of the wrong type, or a
// family whose rule is not known here, is an error naming the key and the
// config; where a family's own code has a default for a key (transformers'
// config classes, llama.cpp's loader), it is taken.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <swiglu/moe.hpp>

#include "io/gguf.hpp"

namespace swiglu::detail {

// Whether a layer has a tensor (or block) of a kind: never (not looked
// for), required, or used where the file holds it.
enum class Presence { none, optional, required };

struct MoeConfig {
    std::string model;         // model_type ("qwen2_moe") or general.architecture ("qwen2moe")
    std::string source;        // the config's path, or "GGUF metadata"
    std::int64_t experts = 0;  // E as the config declares it
    std::string experts_key;   // the key it is under, for messages
    std::string k_key;         // the key k (rule.top_k) is under
    RouterRule rule;
    Presence bias = Presence::none;  // DeepSeek-V3's e_score_correction_bias
    Presence shared = Presence::none;
    Presence shared_gate = Presence::none;  // Qwen2-MoE's shared_expert_gate
    // n_shared_experts (DeepSeek; GGUF's expert_shared_count), 1 for
    // Qwen2-MoE's one shared expert; 0 where the config says none.
    std::int64_t shared_experts = 0;
};

// The rule of the config.json at `path` (read as distrustfully as an index:
// at most 16 MB of strict JSON). Throws swiglu::Error(invalid_argument)
// whose message starts with `path`; a missing file is
// "<path>: not found: ...".
MoeConfig hf_moe_config(const std::string& path);
// The same from the config's text; `label` names it in messages.
MoeConfig hf_moe_config_text(std::string_view text, const std::string& label);

// The rule of a GGUF file's metadata. Throws swiglu::Error(invalid_argument)
// naming the key, after "GGUF metadata".
MoeConfig gguf_moe_config(const GgufFile& file);

}  // namespace swiglu::detail
