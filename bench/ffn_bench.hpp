// What ffn_bench.cpp offers main.cpp: the library's defaults and what runs
// underneath, the thread counts, the ffn/baseline benchmarks and --profile.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "bench_dtypes.hpp"
#include "swiglu/swiglu.hpp"

namespace swiglu_bench {

// The kernels every block this benchmark builds may take: main.cpp sets it
// from --panels, --grouped-prefill and --s8-rows before any is built.
swiglu::BuildPolicy& build_policy();
// Options{threads, dtype} with that policy; a mixed entry sets down_dtype.
swiglu::Options bench_options(int threads,
                              const BenchDtype& bd = BenchDtype::of(swiglu::Dtype::f32));

// What swiglu::Options{threads = 0} resolves to and what runs underneath,
// from small Ffns (one per dtype) built at start-up; `error` is set (and
// threads falls back to this process's CPU affinity count) when building the
// f32 one failed. `matmul` and `dtype_error` are per dtype (indexed by
// int(swiglu::Dtype)): the implementation, or why that dtype can't run here.
struct LibraryInfo {
    int threads_default = 1;
    std::string matmul, activation, error;
    std::string dtype_matmul[std::size(swiglu::kDtypes)], dtype_error[std::size(swiglu::kDtypes)];
};
LibraryInfo library_info();

// Thread counts of the ffn/baseline benchmarks: 1, 2, and the default when > 2.
std::vector<int> bench_thread_counts(int threads_default);

// Registers baseline/<shape>/<dtype>/M:<tokens>/T:<threads> and
// ffn/<shape>/<dtype>/M:<tokens>/T:<threads> for each of `dtypes`: shape by
// shape (llama7b last, skipped when `quick`), then by dtype, then by threads,
// then by tokens, baseline before ffn. This order keeps one shape's weights,
// one Ffn and one baseline alive at a time, each built as rarely as possible.
void register_ffn_benchmarks(bool quick, const std::vector<int>& threads,
                             const std::vector<BenchDtype>& dtypes);

// --profile: glass, cyber and llama7b (unless `quick`) at 1, 16 and 512
// tokens on all cores, ffn and baseline, for each of `dtypes`; prints one
// table. Returns the exit status.
int run_profile(bool quick, const std::vector<BenchDtype>& dtypes);

// Token counts of the ridge, where streaming the weights and computing on
// them take about as long (batched decode, speculative drafts).
inline constexpr std::int64_t kRidgeTokens[] = {4, 8, 16, 32};

// --ridge: each shape (llama7b unless `quick`) and dtype at kRidgeTokens on
// all cores, ffn alone, beside its limit (roofline.hpp): the read and
// compute times, which bounds it, and the share reached. Returns the exit
// status.
int run_ridge(bool quick, const std::vector<BenchDtype>& dtypes);

}  // namespace swiglu_bench
