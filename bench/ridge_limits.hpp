// The ridge's limits, restated (issue 45): what one call at 4-32 tokens can
// take at least on this machine, measured in the same run.
//
//   read     the weight bytes at the rate they can be read where they live
//            (roofline.hpp), as before
//   compute  FLOPs at the dtype's probed peak (roofline.hpp) for f32, bf16
//            and int8; for the GGUF block formats at their kernels' own
//            per-block bound instead: the GOP/s of a block of the same
//            format whose weights sit in cache (d = 256, f = 1024: 0.2-0.8 MB),
//            same tokens and threads, its fixed cost (below) taken off. A
//            block format's kernel unpacks, scales and sums per block, work
//            the int8 peak does not count, so that peak is no bound for it.
//   fixed    glass and cyber only (llama7b's calls are long enough for it not
//            to matter): the measured cost of the forward's two pool phases
//            (an empty run of the shared pool, on T threads) and of a call
//            (the forward of a d = f = 1 block of the dtype on one thread, at
//            the same tokens: argument checks, the workspace lease, x's
//            quantisation), added to the longer of read and compute.
#pragma once

#include <cstdint>

#include "bench_dtypes.hpp"
#include "roofline.hpp"
#include "shapes.hpp"

namespace swiglu_bench {

struct RidgeLimit {
    Limit roof;              // read and compute as roofline(), compute restated for block formats
    double kernel_gops = 0;  // block formats: the per-block bound's rate (0: the peak was used)
    double phase_s = 0;      // one empty pool phase (0 on one thread or for llama7b)
    double call_s = 0;       // a call's fixed cost (0 for llama7b)
    double seconds() const { return roof.seconds() + 2 * phase_s + call_s; }
    const char* bound() const;  // "bytes", "compute" or "kernel", "+fixed" where fixed counted
};

// Measures what it needs on first use per (dtype, tokens, threads) and
// keeps it. Call with the row's block alive (its pool is the one timed).
RidgeLimit ridge_limit(const Shape& s, std::int64_t tokens, int threads, const BenchDtype& dtype);

}  // namespace swiglu_bench
