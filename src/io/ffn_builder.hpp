// An Ffn packed straight from a resolved block's mapped tensors (no f32
// copy of its weights): what load_ffn, load_ffn_slice and a Mixture-of-
// Experts layer's loader share. Implemented in io/load_ffn.cpp, apart from
// the readers the fuzzers link without core/.
#pragma once

#include <swiglu/checkpoint.hpp>

#include "io/checkpoint_loader.hpp"

namespace swiglu::detail {

// The block in `options` (keep_stored resolved per its stored formats);
// only hidden columns `columns` of it where given (load_ffn_slice's checks).
Ffn build_ffn(const ResolvedBlock& block, const Options& options,
              const HiddenColumns* columns = nullptr);

}  // namespace swiglu::detail
