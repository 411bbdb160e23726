// A Mixture-of-Experts layer of a checkpoint, found and checked: its routed
// experts (discovery's blocks of the layer: Hugging Face's experts.E.
// prefixes, or GGUF's stacked ffn_*_exps), the router and the other
// tensors beside them, named as the model family names them after the
// experts' container P (the prefix before "experts.E."):
//   router        P gate.weight                     GGUF: P ffn_gate_inp.weight
//   bias          P gate.e_score_correction_bias          P exp_probs_b.bias
//   shared block  P shared_expert. (Qwen2-MoE),           P ffn_{gate,up,down}_shexp.weight
//                 P shared_experts. (DeepSeek)
//   shared gate   P shared_expert_gate.weight             P ffn_gate_inp_shexp.weight
// and the routing rule from the config (io/moe_config.hpp). No values read.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <swiglu/moe_checkpoint.hpp>

#include "io/block_discovery.hpp"
#include "io/checkpoint_files.hpp"
#include "io/stored_tensor.hpp"

namespace swiglu::detail {

struct ResolvedMoe {
    MoeInfo info;
    StoredTensor router;                      // (E, d)
    std::optional<StoredTensor> bias;         // E values
    std::optional<StoredTensor> shared_gate;  // d values
    std::vector<FoundBlock> experts;          // expert e at [e]
    std::optional<FoundBlock> shared;
};

// The layers that hold routed experts, ascending (names only).
std::vector<std::int64_t> moe_layers(const CheckpointFiles& files);

// Layer `layer`, checked. Throws swiglu::Error(invalid_argument) whose
// message starts with the file's label, naming what is missing or
// disagrees (unsupported for a tensor in a type the loader does not read).
ResolvedMoe resolve_moe_layer(const CheckpointFiles& files, std::int64_t layer);

}  // namespace swiglu::detail
