// What this machine allows one call of the block at most: the time its
// weights take to read from where they live, or its arithmetic at the
// dtype's peak, whichever is longer (the benchmarks' roofline_pct, the
// profile's roof% and the ridge table divide by it).
#pragma once

#include <cstdint>

#include "bench_dtypes.hpp"
#include "shapes.hpp"

namespace swiglu_bench {

struct Limit {
    double read_gbs = 0;  // rate the weights are read at (0: unknown)
    double bytes_s = 0;   // weight bytes / read_gbs
    double flops_s = 0;   // FLOPs (OPs) / peak(dtype, threads)
    double seconds() const { return bytes_s > flops_s ? bytes_s : flops_s; }
    const char* bound() const { return bytes_s > flops_s ? "bytes" : "compute"; }
};

// For `tokens` rows on `threads` threads. Weights under 256 MiB are read at
// the rate measured for a buffer of their size (read_probe.hpp: L2, L3, or
// DRAM when they fit no cache), larger ones at the DRAM probe's.
// A mixed entry's bytes are its formats' (weight_bytes), its peak gate's.
Limit roofline(const Shape& s, std::int64_t tokens, int threads, const BenchDtype& bd);

}  // namespace swiglu_bench
