// The baseline the ffn benchmarks are compared with: what one would write
// with oneDNN alone. Three plain oneDNN matmuls (gate, up, down) with weights
// prepacked once (format_tag::any + a reorder), oneDNN owning the cores
// through OpenMP, and a scalar SiLU(gate)*up loop over the whole (M, f)
// buffers between them.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "shapes.hpp"

namespace swiglu_bench {

// Weights in oneDNN's preferred (blocked) layout; reused by the next Baseline
// when its primitives want the same layout.
struct PackedWeights {
    dnnl::memory gate, up, down;
};

class Baseline {
public:
    // Calls omp_set_num_threads(threads) and then creates the primitives for
    // `tokens` rows (oneDNN 2.6 fixes its thread count at creation).
    // `reuse`: packed weights of a previous Baseline of the same shape, kept
    // when their layout matches, dropped otherwise (before repacking).
    Baseline(const ShapeWeights& w, std::int64_t tokens, int threads, PackedWeights reuse = {});

    // y = block(x), x and y (tokens, d). Call omp_set_num_threads(threads())
    // first if anything may have changed it since construction.
    void forward(const float* x, float* y);

    PackedWeights take_packed() { return std::move(packed_); }
    int threads() const { return threads_; }
    std::int64_t tokens() const { return m_; }
    // oneDNN implementations, e.g. "brg:avx512_core / brg:avx512_core".
    std::string implementation() const;

private:
    std::int64_t m_, d_, f_;
    int threads_;
    dnnl::stream stream_;
    dnnl::matmul::primitive_desc up_pd_, down_pd_;  // up_pd_ serves gate and up
    dnnl::matmul up_mm_, down_mm_;
    PackedWeights packed_;
    std::vector<float> gate_, up_, act_;
    dnnl::memory x_mem_, y_mem_, gate_mem_, up_mem_, act_mem_;
};

// max |a - b| / max |b| over n values.
double relative_max_diff(const float* a, const float* b, std::size_t n);

}  // namespace swiglu_bench
