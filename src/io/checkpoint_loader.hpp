// The checkpoint loader on files already opened (one safetensors file from
// disk or memory, or a sharded checkpoint's index): what load_weights(path)
// runs, for the tests and fuzzers that have no file system path. Implemented in io/checkpoint.cpp.
#pragma once

#include <swiglu/checkpoint.hpp>

#include "io/block_discovery.hpp"
#include "io/checkpoint_files.hpp"
#include "io/safetensors.hpp"

namespace swiglu::detail {

// The chosen block, checked, its values not read: what load_weights decodes
// to f32 and load_ffn packs straight from the file.
struct ResolvedBlock {
    LoadedWeights described;  // names, scheme, d, f, layouts; no values
    StoredTensor gate;        // [2f, d] gate rows then up rows when `merged`
    StoredTensor up;          // empty when merged
    StoredTensor down;
    bool merged = false;
};
ResolvedBlock resolve_block(const CheckpointFiles& files, const WeightSelector& selector);
// The chosen block's description, as list_blocks gives it (problem "").
BlockInfo describe_block(const CheckpointFiles& files, const WeightSelector& selector);
// The same for a block already found (discovery's, or one a caller names:
// a Mixture-of-Experts layer's experts and shared block), checked alike.
ResolvedBlock resolve_block(const CheckpointFiles& files, const FoundBlock& block);
BlockInfo describe_block(const CheckpointFiles& files, const FoundBlock& block);

LoadedWeights load_weights(const CheckpointFiles& files, const WeightSelector& selector);

// The options a block whose weights are stored as `gate`, `up` and `down`
// is built with: `options` with keep_stored resolved (Options::keep_stored)
// into dtype and down_dtype, and keep_stored false; `options` as given
// without it. What load_ffn, stored_options and the import note share.
Options resolve_stored(const FormatTraits& gate, const FormatTraits& up, const FormatTraits& down,
                       const Options& options);
std::vector<BlockInfo> list_blocks(const CheckpointFiles& files);
// The same on one file.
LoadedWeights load_weights(const SafetensorsFile& file, const WeightSelector& selector);
std::vector<BlockInfo> list_blocks(const SafetensorsFile& file);

}  // namespace swiglu::detail
