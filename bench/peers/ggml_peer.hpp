// What swiglu_ggml_peer's two tables share: the ggml CPU backend and the
// buffer type llama.cpp would give a weight, the dtypes both libraries
// have, the block check against our quantiser, the options and the error
// bounds. ggml_peer.cpp: the dense block's rows; ggml_peer_moe.cpp: the
// routed experts' rows (bench/peers/README.md).
#pragma once

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "bench_dtypes.hpp"
#include "swiglu/swiglu.hpp"

namespace swiglu_ggml_peer {

using swiglu::Dtype;
using swiglu_bench::BenchDtype;

// ggml's type for each dtype both libraries have; int8 (per-channel s8)
// has no ggml counterpart.
inline bool has_ggml_type(Dtype dtype) { return dtype != Dtype::int8; }

inline ggml_type ggml_type_of(Dtype dtype) {
    switch (dtype) {
        case Dtype::bf16: return GGML_TYPE_BF16;
        case Dtype::q8_0: return GGML_TYPE_Q8_0;
        case Dtype::q4_0: return GGML_TYPE_Q4_0;
        case Dtype::q4_k: return GGML_TYPE_Q4_K;
        case Dtype::q5_k: return GGML_TYPE_Q5_K;
        case Dtype::q6_k: return GGML_TYPE_Q6_K;
        default: return GGML_TYPE_F32;
    }
}

// Our Options for an entry: a mix sets down's format apart.
inline swiglu::Options ours_options(int threads, const BenchDtype& bd) {
    swiglu::Options o;
    o.threads = threads;
    o.dtype = bd.dtype;
    if (bd.mixed()) o.down_dtype = bd.down;
    return o;
}

// Whether our format table's quantiser gives `bytes` (ggml's blocks of a
// rows x n matrix) from the same f32 values.
bool same_blocks(Dtype dtype, const float* src, std::int64_t rows, std::int64_t n,
                 const char* bytes);

// The ggml CPU backend and its device, for the whole run.
struct Backend {
    ggml_backend_t cpu = nullptr;
    ggml_backend_dev_t dev = nullptr;
    std::vector<ggml_backend_buffer_type_t> extra;  // the device's extra buffer types

    Backend();
    ~Backend();
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    // What llama.cpp's weight_buft_supported does: the first extra buffer
    // type whose mul_mat with this (in, out) weight the device supports,
    // else the CPU buffer type. experts > 0: a stacked (in, out, experts)
    // weight and its mul_mat_id with `used` experts per token, as llama.cpp
    // checks an expert tensor.
    ggml_backend_buffer_type_t weight_buft(ggml_type type, std::int64_t in, std::int64_t out,
                                           std::int64_t experts = 0, std::int64_t used = 0) const;
};

inline std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

inline bool listed(const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
}

// max|a - b| / max|b| over n values
inline double rel_err(const float* a, const float* b, std::size_t n) {
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < n; ++i) {
        diff = std::max(diff, double(std::fabs(a[i] - b[i])));
        ref = std::max(ref, double(std::fabs(b[i])));
    }
    return ref > 0 ? diff / ref : diff;
}

// What the check accepts: f32 and bf16 round the same way on both sides
// (sums differ in order); the block formats quantise activations alike
// (Q8_0's blocks of 32, Q8_K's of 256: s8, one scale each), if not bit for
// bit the same way.
inline double max_err(Dtype dtype) {
    return dtype == Dtype::f32 ? 1e-5 : dtype == Dtype::bf16 ? 1e-3 : 2e-2;
}

// Computes g's graph with the backend's current thread count; exits on failure.
void compute(const Backend& be, ggml_cgraph* graph);

// The MoE rows' arguments (--moe, or MoE names in --shapes).
struct MoeArgs {
    std::vector<std::string> shapes;  // of moe_shapes(); empty: no MoE rows
    std::vector<std::string> dtypes;
    std::vector<std::int64_t> tokens;
    std::vector<int> threads;
};

// The MoE table: one row per (shape, dtype, M, T) of `args`; returns the
// rows over the check's bound.
int run_moe(const Backend& be, const MoeArgs& args);

}  // namespace swiglu_ggml_peer
