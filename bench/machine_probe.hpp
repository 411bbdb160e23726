// What this machine can do at most, measured once when swiglu_bench starts:
// peak f32 FMA throughput, peak bf16 dot-product throughput (vdpbf16ps), peak
// int8 dot-product throughput (vpdpbusd) and DRAM streaming-read bandwidth,
// on 1 thread and on the larger thread counts the benchmarks use. The
// roofline counters of the benchmarks divide by these numbers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "swiglu/swiglu.hpp"

namespace swiglu_bench {

struct MachineProbe {
    std::string cpu_model;     // /proc/cpuinfo "model name"
    std::string isa;           // ISA of the f32 and read probe kernels: avx512f, avx2+fma or sse2
    int threads_default = 1;   // what swiglu::Options{threads = 0} resolves to
    std::vector<int> threads;  // thread counts measured
    std::map<int, double> peak_gflops;       // threads -> f32 GFLOP/s, all threads together
    std::map<int, double> peak_bf16_gflops;  // threads -> bf16 GFLOP/s (vdpbf16ps zmm)
    std::map<int, double> peak_int8_gops;    // threads -> int8 GOP/s (vpdpbusd zmm, or
                                             // vpmaddubsw+vpmaddwd+vpaddd ymm without VNNI)
    // Where the bf16 / int8 peaks come from: the instruction probed
    // ("vdpbf16ps zmm", "vpdpbusd zmm", "vpmaddubsw+vpmaddwd+vpaddd ymm"), or
    // "f32 (no avx512_bf16)" / "f32 (no avx2)" when the CPU lacks it and the
    // f32 peak stands in.
    std::string bf16_source, int8_source;
    std::map<int, double> dram_gbs;  // threads -> GB/s (1e9 bytes/s), all threads together
    int dram_streams = 1;            // streams per thread of the best DRAM read (read_probe.hpp)
    double seconds = 0;              // how long the probe took
    // Share of all CPUs idle during 0.2 s just before the probe (-1 if
    // unknown). Well below 100 means other processes were running: the
    // probe values (and every benchmark) are then likely too low.
    double idle_pct_before = -1;
    // The worst over the measured thread counts T > 1 of f32 peak(T) /
    // (T x peak(1)): about 1 where every core was ours during the probe.
    double cores_scaling = 1;
    bool measured = false;

    // The value for `threads`; a count that was not measured is estimated
    // from the nearest measured one below it (scaled linearly for the compute
    // peaks, not scaled for bandwidth). peak(t, dtype): the f32, bf16 or int8
    // peak (FLOP/s or OP/s, in units of 1e9); q8_0 and q4_0 get the int8
    // one (their kernels multiply s8 quants).
    double peak(int threads, swiglu::Dtype dtype = swiglu::Dtype::f32) const;
    double dram(int threads) const;
};

// The process-wide probe result (empty until run_machine_probe()).
const MachineProbe& machine();

// Measures the compute peaks and DRAM bandwidth for 1, 2 and `threads_default`
// threads (the latter when it is > 2). Takes about 2-4 s.
const MachineProbe& run_machine_probe(int threads_default);

// DRAM read bandwidth again, for the thread counts of the first probe (best
// of 3 passes each), so that a run can say what the host's bandwidth was
// after its benchmarks too: it swings with other tenants. Empty if the
// first probe did not run or the buffer could not be allocated.
std::map<int, double> probe_dram_again();

// Adds the probe values to Google Benchmark's context (console and JSON).
void add_probe_context(const MachineProbe& probe);

// One line per value, for --profile.
void print_probe(const MachineProbe& probe);

}  // namespace swiglu_bench
