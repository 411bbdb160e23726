// The baseline the ffn benchmarks are compared with: what one would write
// with oneDNN alone, oneDNN owning the cores through OpenMP.
//
//   f32:  three plain oneDNN f32 matmuls (gate, up, down) with weights
//         prepacked once (format_tag::any + a reorder) and a scalar
//         SiLU(gate)*up loop over the whole (M, f) buffers between them.
//   bf16: the same with bf16 weights (rounded by the packing reorder) and bf16
//         matmul sources: x and act are converted f32 -> bf16 per call by
//         reorder primitives created once; gate, up and y come out f32.
//   int8: s8 x s8 -> s32 matmuls. Weights quantized once per output channel
//         (symmetric, scale = max|column| / 127); x and act quantized per
//         token (row) per call, dequantization and SiLU(gate)*up in plain
//         scalar loops.
//   q8_0, q4_0, q4_k, q5_k, q6_k: oneDNN 2.6 has no grouped low-bit matmul,
//         so the f32 one on the weights rounded through GGUF's blocks
//         (dequantized at load): what a oneDNN-only port could run,
//         streaming 4 bytes per weight. A mix (q4_k_m) rounds each matrix
//         through its own format.
// The scalar loops (SiLU*up, quantization, dequantization) run on the calling
// thread only, as a first oneDNN port would have them.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_dtypes.hpp"
#include "swiglu/swiglu.hpp"
#include "weights.hpp"

namespace swiglu_bench {

// The data type oneDNN's matmuls take `dtype`'s activations and weights in
// (f32 for the block formats: their baseline runs on their rounded weights).
dnnl::memory::data_type matmul_src_type(swiglu::Dtype dtype);

// Weights in oneDNN's preferred (blocked) layout, of one dtype; reused by the
// next Baseline of that dtype when its primitives want the same layout.
struct PackedWeights {
    BenchDtype dtype = BenchDtype::of(swiglu::Dtype::f32);
    dnnl::memory gate, up, down;
    // int8: one scale per output channel (f for gate and up, d for down).
    std::vector<float> gate_scale, up_scale, down_scale;
};

class Baseline {
public:
    // Calls omp_set_num_threads(threads) and then creates the primitives for
    // `tokens` rows (oneDNN 2.6 fixes its thread count at creation).
    // `reuse`: packed weights of a previous Baseline of the same shape, kept
    // when their dtype and layout match, dropped otherwise (before repacking).
    // Throws swiglu::Error(Status::unsupported) when oneDNN has only its
    // reference implementation for a bf16 or int8 matmul on this CPU (it
    // would take minutes per llama7b call and prove nothing).
    Baseline(const ShapeWeights& w, const BenchDtype& dtype, std::int64_t tokens, int threads,
             PackedWeights reuse = {});

    // y = block(x), x and y (tokens, d) f32. Call omp_set_num_threads(threads())
    // first if anything may have changed it since construction.
    void forward(const float* x, float* y);

    PackedWeights take_packed() { return std::move(packed_); }
    const BenchDtype& dtype() const { return bench_dtype_; }
    int threads() const { return threads_; }
    std::int64_t tokens() const { return m_; }
    // oneDNN implementations, e.g. "brg:avx512_core / brg:avx512_core".
    std::string implementation() const;

private:
    void gate_and_up();
    void down();
    void forward_f32(const float* x, float* y);
    void forward_bf16(const float* x, float* y);
    void forward_int8(const float* x, float* y);

    BenchDtype bench_dtype_;
    swiglu::Dtype dtype_;  // gate's, which picks the matmuls' types
    std::int64_t m_, d_, f_;
    int threads_;
    dnnl::stream stream_;
    dnnl::matmul::primitive_desc up_pd_, down_pd_;  // up_pd_ serves gate and up
    dnnl::matmul up_mm_, down_mm_;
    PackedWeights packed_;
    // f32 (M, f) buffers: gate and up out of the matmuls (dequantized for
    // int8), act = SiLU(gate) * up.
    std::vector<float> gate_, up_, act_;
    // bf16 / int8 copies of x (M, d) and act (M, f) as the matmuls read them.
    std::vector<unsigned char> x_lp_, act_lp_;
    // int8: s32 accumulators and the per-token scales of x and act.
    std::vector<std::int32_t> gate_acc_, up_acc_, y_acc_;
    std::vector<float> x_scale_, act_scale_;
    // bf16: f32 -> bf16 conversions of x and act.
    dnnl::reorder x_cvt_, act_cvt_;
    dnnl::memory x_f32_mem_, act_f32_mem_;
    // What the matmuls read and write.
    dnnl::memory x_mem_, y_mem_, gate_mem_, up_mem_, act_mem_;
};

// max |a - b| / max |b| over n values.
double relative_max_diff(const float* a, const float* b, std::size_t n);

}  // namespace swiglu_bench
