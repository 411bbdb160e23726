// Loading the block's weights from safetensors checkpoints: finding the
// blocks a file holds and choosing one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

namespace swiglu {

// Which block of a checkpoint to load. The loader finds every block the
// file holds, under any prefix, in the known naming schemes
// (docs/checkpoints.md). With nothing set, the file must hold exactly one; layer
// and expert keep the blocks of that layer (the number after "layers.",
// "blocks." or "blk.") and expert (after "experts."), and exactly one must
// remain; a prefix names the block itself, in any scheme (not with the
// others). Otherwise the error lists what the file holds and which selector
// tells the blocks apart.
struct WeightSelector {
    std::int64_t layer = -1;   // >= 0: model.layers.{layer}.mlp., layers.{layer}.feed_forward., ...
    std::string prefix;        // non-empty: the block's prefix, "model.layers.3.mlp." or
                               // "model.layers.3.mlp" (the '.' is added where needed)
    std::int64_t expert = -1;  // >= 0: a Mixture-of-Experts expert, ...experts.{expert}.
};

// One block a checkpoint holds, as list_blocks finds it.
struct SWIGLU_API BlockInfo {
    std::string prefix;                    // "" for a block at the top level
    std::string scheme;                    // e.g. "hf-llama", "mixtral-expert", "cyberslm"
    std::int64_t layer = -1, expert = -1;  // -1: the prefix has none
    std::string gate_name, up_name, down_name;
    std::string source_dtype;  // "F32", "BF16", "F16" or "mixed (...)"
    std::int64_t d = 0, f = 0;
    std::string problem;  // why it would not load (shapes, dtype), or ""
    // Where a weight is stored in a block format a block runs in (GGUF's
    // Q8_0, Q4_0, Q4_K, Q5_K, Q6_K): what `--dtype stored`
    // (Options::keep_stored) runs as stored, or why it cannot; else "".
    std::string import_note;
    // Each weight's format as the file names it ("Q4_K", "F16", "BF16"):
    // what Options::keep_stored keeps (stored_options). "" with a problem.
    std::string gate_format, up_format, down_format;
};

// The three weights of one block, converted to f32 and owned here. Keep it
// alive only as long as you need the views (an Ffn copies what it needs).
struct SWIGLU_API LoadedWeights {
    std::int64_t d = 0;
    std::int64_t f = 0;
    std::string scheme;  // the naming scheme that matched, e.g. "hf-llama", "glassllm"
    std::string prefix;  // where the block sits, e.g. "model.layers.3.mlp."
    std::int64_t layer = -1, expert = -1;       // -1: the prefix has none
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

// Every block `path` holds, in natural order of the prefix (layers 2 before
// 10), each with its shape or the reason it would not load. Throws
// swiglu::Error for a malformed file.
SWIGLU_API std::vector<BlockInfo> list_blocks(const std::string& path);

// The block `selector` chooses, as list_blocks describes it, without reading
// its values (problem is ""). Throws like load_weights.
SWIGLU_API BlockInfo describe_block(const std::string& path, const WeightSelector& selector = {});

// The options load_ffn and load_ffn_slice build `block` with: with
// options.keep_stored, dtype and down_dtype as its stored formats decide
// (Options::keep_stored) and keep_stored false; else `options` itself.
// For `swiglu info` and the MPI shards, which need the dtypes before the
// block is built. Throws invalid_argument for a format no file stores.
SWIGLU_API Options stored_options(const BlockInfo& block, const Options& options);
// The values per block (1, 32 or 256) of the largest block among the
// block's stored formats and the ones it runs in under `options`: hidden
// columns cut on multiples of it cut no block, stored or quantised
// (load_ffn_slice, the MPI shards). Throws like stored_options.
SWIGLU_API std::int64_t block_values(const BlockInfo& block, const Options& options);

// load_weights + Ffn in one step. The block packs straight from the mapped
// file, a tile at a time: no f32 copy of the weights is made. With
// options.keep_stored each weight runs in its stored format where it can
// (stored_options).
SWIGLU_API Ffn load_ffn(const std::string& path, const WeightSelector& selector = {},
                        const Options& options = {});

// Hidden columns [begin, end) of a block's f.
struct HiddenColumns {
    std::int64_t begin = 0, end = 0;
};

// load_ffn for a slice of the block: gate's and up's outputs and down's
// inputs in hidden columns `columns` only, an Ffn with f = end - begin whose
// y is that slice's share of the block's y (the shares of slices that
// partition [0, f) sum to it). What one rank of a tensor-parallel group runs
// (swiglu/mpi.hpp). Only the pages of the file that hold that slice's
// values are read (read-around is turned off where the slice is a window of
// each row), except the rest of a GGUF block a boundary cuts (32 values,
// 256 for the K-quants: a slice on such boundaries cuts none). Throws invalid_argument unless
// 0 <= begin < end <= f.
SWIGLU_API Ffn load_ffn_slice(const std::string& path, HiddenColumns columns,
                              const WeightSelector& selector = {}, const Options& options = {});

}  // namespace swiglu
