// Which block of a checkpoint a WeightSelector picks: the blocks discovery
// finds (io/block_discovery.hpp), GGUF's stacked experts expanded, and the
// errors that say what the file holds when the selector does not match
// exactly one.
#pragma once

#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>

#include "io/block_discovery.hpp"
#include "io/checkpoint_files.hpp"

namespace swiglu::detail {

// Throws Error(status) with the file's label in front of `what`.
[[noreturn]] void fail(const CheckpointFiles& file, const std::string& what,
                       Status status = Status::invalid_argument);

// A stacked block (GGUF's ffn_*_exps) as one block per expert, once its
// gate's shape (E, out, in) says how many; left whole when it has no such
// shape or a type whose size was not checked against the file (checking
// the block then says what is wrong).
std::vector<FoundBlock> expand_stacked(const CheckpointFiles& file, std::vector<FoundBlock> blocks);

// The one block `selector` picks; throws, naming what the file holds and
// which selector tells its blocks apart, when none or several match.
FoundBlock select_block(const CheckpointFiles& file, const WeightSelector& selector);

}  // namespace swiglu::detail
