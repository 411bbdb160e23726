// The dtypes the suites sweep. The library exports no list of its dtypes (as
// it does of its ISAs, detail::kIsas), so the tests keep this one: a new
// Dtype is added here, and every sweep below takes it up.
#pragma once

#include <swiglu/swiglu.hpp>

namespace swiglu::test {

inline constexpr Dtype kDtypes[] = {Dtype::f32, Dtype::bf16, Dtype::int8};
// Those that round the weights, each checked against its own simulation.
inline constexpr Dtype kReducedDtypes[] = {Dtype::bf16, Dtype::int8};

}  // namespace swiglu::test
