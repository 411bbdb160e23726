// The baseline of the backward benchmarks: the block's backward as one would
// write it with oneDNN alone, oneDNN owning the cores through OpenMP, from
// the same saved gate and up:
//   dact = dy @ Wd^T; dgate, dup, act in a scalar loop over the (M, f)
//   buffers (the calling thread only); dx = dgate @ Wg^T + dup @ Wu^T (the
//   second with oneDNN's sum post-op); dWg = dgate^T @ x, dWu = dup^T @ x,
//   dWd = dy^T @ act on transposed views. Weights prepacked once, every
//   primitive created once for (M, threads).
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <vector>

#include "weights.hpp"

namespace swiglu_bench {

class BackwardBaseline {
public:
    // Calls omp_set_num_threads(threads) before creating the primitives.
    BackwardBaseline(const ShapeWeights& w, std::int64_t tokens, int threads);

    // dx (M, d) and the weight gradients in (out, in) layout from x, dy and
    // the saved gate, up (M, f each, gate first). Call
    // omp_set_num_threads(threads()) first if anything may have changed it.
    void backward(const float* x, const float* dy, const float* saved, float* dx, float* dgate_w,
                  float* dup_w, float* ddown_w);

    int threads() const { return threads_; }
    std::int64_t tokens() const { return m_; }

private:
    std::int64_t m_, d_, f_;
    int threads_;
    dnnl::stream stream_;
    dnnl::matmul dact_mm_, dx_mm_, dx_acc_mm_, dw_gate_mm_, dw_down_mm_;
    dnnl::memory wd_, wg_, wu_;  // packed: Wd^T (d, f), Wg^T and Wu^T (f, d)
    dnnl::memory::desc dy_md_, dact_md_, f_md_, dx_md_, f_t_md_, x_md_, wgrad_fd_md_, dy_t_md_,
        act_md_, wgrad_df_md_;
    std::vector<float> dact_, dgate_, dup_, act_;
};

}  // namespace swiglu_bench
