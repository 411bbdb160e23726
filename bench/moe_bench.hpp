// The routed-experts benchmarks: moe/<shape>/<dtype>/M:<tokens>/T:<threads>
// for the MoE shapes people run on CPUs (qwen3moe, olmoe, mixtral), with
// routing drawn at random and changed from call to call.
#pragma once

#include <vector>

#include "bench_dtypes.hpp"

namespace swiglu_bench {

// Registers the moe/ rows for each of `dtypes` that the experts' rows run
// (bf16, q8_0, q4_0 and the K-quants; f32 and int8 are left out: f32's
// experts would need 2.4-5.6 GB per shape) at 1, 4, 16, 128 and 512
// tokens. None when `quick`: every MoE shape holds hundreds of MB.
void register_moe_benchmarks(bool quick, const std::vector<int>& threads,
                             const std::vector<BenchDtype>& dtypes);

}  // namespace swiglu_bench
