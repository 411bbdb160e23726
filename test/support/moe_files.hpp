// Mixture-of-Experts layers the loader suites write: one layer's weights
// (router, experts, bias, shared block and gate), the tensors a Hugging
// Face family or a GGUF file names them by, and the MoeLayer a caller with
// the same arrays in memory builds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/moe.hpp>

#include "gguf_writer.hpp"
#include "reference.hpp"
#include "safetensors_writer.hpp"

namespace swiglu::test {

struct MoeWeights {
    // E experts of (d, f) and, with shared_f > 0, a shared block of (d, shared_f).
    MoeWeights(std::int64_t d, std::int64_t f, std::int64_t experts, std::int64_t shared_f,
               unsigned seed);
    std::int64_t d, f, e;
    std::vector<RandomBlock> experts;
    std::vector<float> router;       // (E, d), out_in
    std::vector<float> bias;         // E
    std::vector<float> shared_gate;  // d
    std::unique_ptr<RandomBlock> shared;

    // Every expert's and the shared block's values as `dtype` stores them
    // ("F32", "BF16", "F16"), so that a file of that dtype holds them exactly.
    void round_blocks(const std::string& dtype);
    void round_router(const std::string& dtype);  // the router, bias and shared gate

    // The experts' gate, up and down each stacked, E matrices one after
    // another in `layout`, as Experts::stacked takes them.
    struct Stacked {
        std::vector<float> gate, up, down;
    };
    Stacked stacked(Layout layout) const;
    // The layer built from these arrays.
    MoeLayer layer(const RouterRule& rule, bool with_bias, bool with_shared, bool with_gate,
                   const Options& options = {}) const;
    // y in double for x's tokens given their experts and weights (tokens x k).
    std::vector<double> reference(const float* x, std::int64_t tokens, const std::int32_t* ids,
                                  const float* weights, std::int64_t k, bool with_shared,
                                  bool with_gate) const;
};

// Where a Hugging Face family puts a layer's tensors, after "model.layers.N.".
struct HfMoeNames {
    const char* container;  // "block_sparse_moe." (Mixtral) or "mlp."
    const char *gate, *up, *down;
    const char* shared;  // "shared_expert." (Qwen2-MoE), "shared_experts." (DeepSeek), or nullptr
    bool shared_gate;    // Qwen2-MoE's shared_expert_gate.weight (1, d)
    bool bias;           // DeepSeek-V3's gate.e_score_correction_bias (E)
};
extern const HfMoeNames kMixtralNames, kQwen2MoeNames, kQwen3MoeNames, kDeepseekV3Names;
// A Qwen2-MoE config.json for MoeWeights(d, 16, 6, 40, seed): 6 experts of
// f = 16, top 4 without renormalising, a shared expert of 40.
extern const char* const kQwen2MoeConfig;

std::vector<TensorSpec> hf_moe_tensors(const MoeWeights& m, const HfMoeNames& names, int layer,
                                       const std::string& dtype,
                                       const std::string& router_dtype = "F32");

// GGUF: blk.N.ffn_gate_inp (router), ffn_{gate,up,down}_exps stacked in
// `type` (down in `down_type` where given), and where asked ffn_*_shexp,
// ffn_gate_inp_shexp, exp_probs_b.
std::vector<GgufTensorSpec> gguf_moe_tensors(const MoeWeights& m, int layer, std::uint32_t type,
                                             std::uint32_t router_type, bool with_shared,
                                             bool with_gate, bool with_bias, int down_type = -1);

}  // namespace swiglu::test
