// Finding SwiGLU blocks among a checkpoint's tensor names, whatever prefix
// they sit under: the names only, so that every container (a safetensors
// file, a sharded checkpoint, GGUF) shares one discovery and one set of
// selection rules and messages.
//
// A block is a prefix P and a naming family whose three role names, after
// P, are all present. P is empty or ends in '.'. The families, in priority
// order (where two complete at one prefix, the first is the block):
//   {gate,up,down}_proj.weight          (out, in)  hf-llama, hf-moe-expert, bare
//   gate_up_proj.weight + down_proj.weight         phi3-merged (gate rows first)
//   {gate,val,out}_proj.weight          (out, in)  cyberslm (the seed's nn.Linear)
//   {gate,val,out}_proj                 (out, in)  cyberslm, without .weight
//   W1, W3, W2                          (in, out)  glassllm (gate, up, down)
//   w1.weight, w3.weight, w2.weight     (out, in)  meta, mixtral-expert (gate, up, down)
//   ffn_{gate,up,down}.weight           (out, in)  gguf (llama.cpp: blk.N.; ne reversed)
//   ffn_{gate,up,down}_exps.weight   (E, out, in)  gguf-expert: a layer's experts stacked
// The layer of a block is the number after a "layers", "blocks" or "blk"
// component of P (model.layers.3.mlp., layers.3.feed_forward.,
// blocks.3.ffn.); its expert the number after "experts"
// (...block_sparse_moe.experts.5., ...mlp.experts.5.). Either is -1 where P
// has none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <swiglu/swiglu.hpp>

namespace swiglu::detail {

struct Family {
    const char* scheme;  // what LoadedWeights::scheme reports, before the prefix refines it
    const char* label;   // in "no block found": the scheme, told apart from its aliases
    const char* gate;
    const char* up;  // nullptr: up is the second half of `gate` (merged gate_up)
    const char* down;
    Layout layout;
    // The three tensors stack every expert of a layer: (E, out, in), one
    // block per expert (GGUF's ffn_*_exps).
    bool stacked = false;
};

// The families above, in priority order.
const std::vector<Family>& block_families();

struct FoundBlock {
    std::string prefix;
    const Family* family = nullptr;
    std::string scheme;  // the family's, refined by where it sits (hf-llama, *-expert, bare)
    std::int64_t layer = -1, expert = -1;
    std::string gate, up, down;  // full tensor names; up empty for a merged gate_up
    // A stacked family's block: `expert` is its slice once the tensors'
    // shapes are known (-1 until then).
    bool stacked = false;
};

// A family that a prefix completes only in part (at least one of its role
// names present), for messages about a block that is not quite there.
struct PartialBlock {
    std::string prefix;
    std::string label;
    std::int64_t layer = -1, expert = -1;
    int present = 0;                   // role names found
    std::vector<std::string> missing;  // full names of those not found
};

struct Discovery {
    std::vector<FoundBlock> blocks;     // one per prefix, in natural order
    std::vector<PartialBlock> partial;  // prefixes with no complete family
};

Discovery discover_blocks(const std::vector<std::string_view>& names);

// The scheme reported for `family` at `prefix`, and the layer and expert
// numbers in a prefix (-1: none).
std::string scheme_at(const Family& family, const std::string& prefix);
std::int64_t layer_of(std::string_view prefix);
std::int64_t expert_of(std::string_view prefix);

// "model.layers.{N}.mlp.experts.{E}.": the prefix with its layer and expert
// numbers replaced, to describe many blocks at once.
std::string prefix_pattern(const std::string& prefix);

// Strings compared with their runs of digits as numbers: layers.2 < layers.10.
bool natural_less(std::string_view a, std::string_view b);

}  // namespace swiglu::detail
