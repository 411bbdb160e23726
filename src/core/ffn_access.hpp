// Building an Ffn from weights as a checkpoint stores them (F16, BF16,
// GGUF blocks: weight_source.hpp), for the loader (io/load_ffn.cpp): the
// block packs straight from the mapped file, with no f32 copy of the
// weights. Validated like the public constructor.
#pragma once

#include <swiglu/swiglu.hpp>

#include "core/weight_source.hpp"

namespace swiglu::detail {

struct FfnAccess {
    static Ffn make(const WeightSource& gate, const WeightSource& up, const WeightSource& down,
                    const Options& options);
};

}  // namespace swiglu::detail
