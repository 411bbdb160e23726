// The backward benchmarks (backward_bench.cpp).
#pragma once

#include <vector>

namespace swiglu_bench {

// Registers, per shape (llama7b unless `quick`), thread count and token
// count: bwd_baseline/<shape>/f32/M:<m>/T:<t> (backward_baseline.hpp),
// bwd/<shape>/f32/M:<m>/T:<t> (Ffn::backward from saved gate and up) and
// bwd_recompute/... (the same recomputing them).
void register_backward_benchmarks(bool quick, const std::vector<int>& threads);

}  // namespace swiglu_bench
