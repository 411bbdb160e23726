// The dtypes the suites sweep: the library's own list (swiglu::kDtypes), and
// those of them that round the weights.
#pragma once

#include <swiglu/swiglu.hpp>

namespace swiglu::test {

using swiglu::kDtypes;
// Those that round the weights, each checked against its own simulation.
inline constexpr Dtype kReducedDtypes[] = {Dtype::bf16, Dtype::int8, Dtype::q8_0, Dtype::q4_0,
                                           Dtype::q4_k, Dtype::q5_k, Dtype::q6_k};

}  // namespace swiglu::test
