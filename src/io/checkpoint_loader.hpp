// The checkpoint loader on a safetensors file already opened, from disk or
// from memory: what load_weights(path) runs, for the tests and fuzzers that
// have no file system path. Implemented in io/checkpoint.cpp.
#pragma once

#include <swiglu/checkpoint.hpp>

#include "io/safetensors.hpp"

namespace swiglu::detail {

LoadedWeights load_weights(const SafetensorsFile& file, const WeightSelector& selector);
std::vector<BlockInfo> list_blocks(const SafetensorsFile& file);

}  // namespace swiglu::detail
