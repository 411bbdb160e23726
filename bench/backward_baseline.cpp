#include "backward_baseline.hpp"

#include <omp.h>

#include <cmath>

#include "onednn/matmul.hpp"

namespace swiglu_bench {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

using swiglu::detail::cpu_engine;

dnnl::matmul::primitive_desc make(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                  const dnnl::memory::desc& dst, bool accumulate = false) {
    dnnl::primitive_attr attr;
    if (accumulate) {
        dnnl::post_ops sum;
        sum.append_sum(1.0f);
        attr.set_post_ops(sum);
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, cpu_engine());
}

// `raw` (k, n) row-major into the layout the primitive chose for its weights.
dnnl::memory pack(const dnnl::matmul::primitive_desc& pd, const float* raw, std::int64_t k,
                  std::int64_t n) {
    dnnl::memory dst(pd.weights_desc(), cpu_engine());
    swiglu::detail::reorder(raw, {{k, n}, dt::f32, tag::ab}, dst);
    return dst;
}

}  // namespace

BackwardBaseline::BackwardBaseline(const ShapeWeights& w, std::int64_t tokens, int threads)
    : m_(tokens), d_(w.shape.d), f_(w.shape.f), threads_(threads), stream_(cpu_engine()) {
    omp_set_num_threads(threads);
    const std::int64_t m = m_, d = d_, f = f_;
    dy_md_ = {{m, d}, dt::f32, tag::ab};
    dact_md_ = {{m, f}, dt::f32, tag::ab};
    f_md_ = dact_md_;
    dx_md_ = dy_md_;
    x_md_ = dy_md_;
    act_md_ = dact_md_;
    f_t_md_ = {{f, m}, dt::f32, tag::ba};       // dgate^T, dup^T: views of (m, f)
    dy_t_md_ = {{d, m}, dt::f32, tag::ba};      // dy^T
    wgrad_fd_md_ = {{f, d}, dt::f32, tag::ab};  // dW_gate, dW_up as (out, in)
    wgrad_df_md_ = {{d, f}, dt::f32, tag::ab};  // dW_down as (out, in)
    const dnnl::memory::desc any_df({d, f}, dt::f32, tag::any), any_fd({f, d}, dt::f32, tag::any);
    const auto dact_pd = make(dy_md_, any_df, dact_md_);
    const auto dx_pd = make(f_md_, any_fd, dx_md_);
    const auto dx_acc_pd = make(f_md_, any_fd, dx_md_, true);
    dact_mm_ = dnnl::matmul(dact_pd);
    dx_mm_ = dnnl::matmul(dx_pd);
    dx_acc_mm_ = dnnl::matmul(dx_acc_pd);
    dw_gate_mm_ = dnnl::matmul(make(f_t_md_, x_md_, wgrad_fd_md_));
    dw_down_mm_ = dnnl::matmul(make(dy_t_md_, act_md_, wgrad_df_md_));
    // (out, in) storage is the transpose the backward multiplies by:
    // Wd stored (d, f) is Wd^T; Wg, Wu stored (f, d) are Wg^T, Wu^T.
    wd_ = pack(dact_pd, w.down.get(), d, f);
    wg_ = pack(dx_pd, w.gate.get(), f, d);
    wu_ = pack(dx_acc_pd, w.up.get(), f, d);
    const auto mf = static_cast<std::size_t>(m * f);
    dact_.resize(mf);
    dgate_.resize(mf);
    dup_.resize(mf);
    act_.resize(mf);
}

void BackwardBaseline::backward(const float* x, const float* dy, const float* saved, float* dx,
                                float* dgate_w, float* dup_w, float* ddown_w) {
    auto mem = [](const dnnl::memory::desc& md, const void* p) {
        return dnnl::memory(md, cpu_engine(), const_cast<void*>(p));
    };
    auto run = [&](dnnl::matmul& mm, const dnnl::memory& src, const dnnl::memory& wei,
                   const dnnl::memory& dst) {
        mm.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    };
    run(dact_mm_, mem(dy_md_, dy), wd_, mem(dact_md_, dact_.data()));
    stream_.wait();
    const float* gate = saved;
    const float* up = saved + m_ * f_;
    for (std::size_t i = 0; i < dact_.size(); ++i) {
        const float g = gate[i], s = 1.0f / (1.0f + std::exp(-g));
        dgate_[i] = dact_[i] * up[i] * s * (1.0f + g * (1.0f - s));
        dup_[i] = dact_[i] * g * s;
        act_[i] = g * s * up[i];
    }
    run(dx_mm_, mem(f_md_, dgate_.data()), wg_, mem(dx_md_, dx));
    run(dx_acc_mm_, mem(f_md_, dup_.data()), wu_, mem(dx_md_, dx));
    run(dw_gate_mm_, mem(f_t_md_, dgate_.data()), mem(x_md_, x), mem(wgrad_fd_md_, dgate_w));
    run(dw_gate_mm_, mem(f_t_md_, dup_.data()), mem(x_md_, x), mem(wgrad_fd_md_, dup_w));
    run(dw_down_mm_, mem(dy_t_md_, dy), mem(act_md_, act_.data()), mem(wgrad_df_md_, ddown_w));
    stream_.wait();
}

}  // namespace swiglu_bench
