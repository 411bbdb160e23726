// --weights, --layer, --expert, --block, --threads and --dtype, shared by
// `run` and `info`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <swiglu/checkpoint.hpp>
#include <swiglu/moe_checkpoint.hpp>

namespace swiglu::cli {

struct WeightsArgs {
    std::string path;
    std::int64_t layer = -1;
    std::int64_t expert = -1;
    std::string prefix;

    WeightSelector selector() const { return {layer, prefix, expert}; }
    bool selects() const { return layer >= 0 || expert >= 0 || !prefix.empty(); }
};

// Adds --weights (required or not), --layer and --expert, and --block
// (alias --prefix; excludes the other two).
void add_weights_options(CLI::App& command, WeightsArgs& args, bool required);
// load_weights for these arguments. Its errors name the checkpoint; where a
// message does not, "weights PATH: " is put in front.
LoadedWeights load_checkpoint(const WeightsArgs& args);
// load_ffn for these arguments, errors named the same way, except those of
// the block itself ("Ffn: ...", e.g. a bad --threads), which are no problem
// of the file.
Ffn load_checkpoint_block(const WeightsArgs& args, const Options& options);
// list_blocks for the checkpoint, its errors named the same way.
std::vector<BlockInfo> list_checkpoint(const WeightsArgs& args);

// The Mixture-of-Experts layer these arguments choose whole, if any:
// --layer N (without --expert or --block) where layer N holds routed
// experts, or, with no selector, the file's only layer when it holds them.
// One expert alone is --layer N --expert E, a block as before.
std::optional<std::int64_t> moe_layer_of(const WeightsArgs& args);
// load_moe_layer / describe_moe_layer for these arguments, errors named as
// load_checkpoint_block's.
MoeLayer load_checkpoint_moe(const WeightsArgs& args, std::int64_t layer, const Options& options);
MoeInfo describe_checkpoint_moe(const WeightsArgs& args, std::int64_t layer);

// Adds --threads N (>= 0, 0 = every core this process may use).
void add_threads_option(CLI::App& command, int& threads);

// describe_block for these arguments (the block, its values not read),
// its errors named the same way.
BlockInfo describe_checkpoint(const WeightsArgs& args);

// Adds --dtype stored|f32|bf16|...|q6_k: the format of the packed weights
// and matmuls, or "stored" (each weight as the file stores it). `dtype`
// keeps the name given, "" when none was (the default depends on the file:
// block_options).
void add_dtype_option(CLI::App& command, std::string& dtype);
// The Options of --threads and --dtype for the checkpoint at `weights`
// ("" for none): "stored" is Options::keep_stored with f32 for the formats
// no block runs; no --dtype is "stored" for a GGUF file (its K-quant and
// mixed blocks run as stored, as llama.cpp runs them) and f32 otherwise.
Options block_options(const std::string& weights, int threads, const std::string& dtype);

}  // namespace swiglu::cli
