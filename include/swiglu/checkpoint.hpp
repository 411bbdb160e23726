// Loading the block's weights from Hugging Face safetensors checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

namespace swiglu {

// Which block of a checkpoint to load. With neither set, the file must hold
// exactly one block in one of the known naming schemes.
struct WeightSelector {
    std::int64_t layer = -1;  // >= 0: model.layers.{layer}.mlp.* (Hugging Face LLaMA style)
    std::string prefix;       // non-empty: {prefix}gate_proj.weight etc. (see README)
};

// The three weights of one block, converted to f32 and owned here. Keep it
// alive only as long as you need the views (an Ffn copies what it needs).
struct SWIGLU_API LoadedWeights {
    std::int64_t d = 0;
    std::int64_t f = 0;
    std::string scheme;  // the naming scheme that matched, e.g. "hf-llama", "glassllm"
    std::string gate_name, up_name, down_name;  // tensor names as stored in the file
    std::string source_dtype;                   // "F32", "BF16" or "F16"
    std::vector<float> gate, up, down;
    Layout gate_layout = Layout::out_in, up_layout = Layout::out_in, down_layout = Layout::out_in;

    WeightView gate_view() const;
    WeightView up_view() const;
    WeightView down_view() const;
};

// Reads and validates `path`. Throws swiglu::Error: invalid_argument for a
// malformed file or missing/disagreeing tensors (the message names the file,
// the tensor and what was expected vs found, and lists the tensors present
// when the three weights are not found), unsupported for a weight whose dtype
// does not convert to f32 (F32, BF16 and F16 do).
SWIGLU_API LoadedWeights load_weights(const std::string& path, const WeightSelector& selector = {});

// load_weights + Ffn in one step.
SWIGLU_API Ffn load_ffn(const std::string& path, const WeightSelector& selector = {},
                        const Options& options = {});

}  // namespace swiglu
