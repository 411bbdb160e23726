#include "baseline.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "activation/silu_mul.hpp"

namespace swiglu_bench {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// splitmix64: a counter-based generator, so every value is a pure function of
// (seed, index) and the weights are the same everywhere.
inline std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Uniform in [-scale, scale).
void fill_uniform(float* p, std::size_t n, std::uint64_t seed, float scale) {
    const std::uint64_t base = splitmix64(seed);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t r = splitmix64(base + i) >> 40;  // 24 bits
        p[i] = (float(r) * (1.0f / 8388608.0f) - 1.0f) * scale;
    }
}

// The packed copy of one (out, in) weight matrix in the layout `want`
// (a K x N = in x out matrix); `reuse` is kept if it already has that layout.
dnnl::memory pack(const float* raw, std::int64_t out, std::int64_t in,
                  const dnnl::memory::desc& want, dnnl::memory reuse, dnnl::stream& stream) {
    if (reuse && reuse.get_desc() == want) return reuse;
    reuse = dnnl::memory();  // free the old layout before allocating the new one
    dnnl::memory src({{in, out}, dt::f32, tag::ba}, cpu_engine(), const_cast<float*>(raw));
    dnnl::memory dst(want, cpu_engine());
    dnnl::reorder(src, dst).execute(stream, src, dst);
    stream.wait();
    return dst;
}

}  // namespace

std::unique_ptr<ShapeWeights> make_weights(const Shape& shape) {
    auto w = std::make_unique<ShapeWeights>();
    w->shape = shape;
    const std::size_t n = std::size_t(shape.d) * std::size_t(shape.f);
    w->gate.reset(new float[n]);
    w->up.reset(new float[n]);
    w->down.reset(new float[n]);
    const std::uint64_t seed = std::uint64_t(shape.d) * 1000003u + std::uint64_t(shape.f);
    fill_uniform(w->gate.get(), n, seed * 3 + 0, 1.0f / std::sqrt(float(shape.d)));
    fill_uniform(w->up.get(), n, seed * 3 + 1, 1.0f / std::sqrt(float(shape.d)));
    fill_uniform(w->down.get(), n, seed * 3 + 2, 1.0f / std::sqrt(float(shape.f)));
    return w;
}

std::vector<float> make_input(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
    std::vector<float> x(std::size_t(rows) * std::size_t(cols));
    fill_uniform(x.data(), x.size(), seed ^ 0x5eed5eedull, 1.0f);
    return x;
}

Baseline::Baseline(const ShapeWeights& w, std::int64_t tokens, int threads, PackedWeights reuse)
    : m_(tokens), d_(w.shape.d), f_(w.shape.f), threads_(std::max(1, threads)) {
    omp_set_num_threads(threads_);
    auto& eng = cpu_engine();
    stream_ = dnnl::stream(eng);

    const dnnl::memory::desc x_md({m_, d_}, dt::f32, tag::ab);
    const dnnl::memory::desc h_md({m_, f_}, dt::f32, tag::ab);
    const dnnl::memory::desc wu_any({d_, f_}, dt::f32, tag::any);
    const dnnl::memory::desc wd_any({f_, d_}, dt::f32, tag::any);

    up_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(x_md, wu_any, h_md), eng);
    down_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(h_md, wd_any, x_md), eng);
    up_mm_ = dnnl::matmul(up_pd_);
    down_mm_ = dnnl::matmul(down_pd_);

    packed_.gate = pack(w.gate.get(), f_, d_, up_pd_.weights_desc(), std::move(reuse.gate), stream_);
    packed_.up = pack(w.up.get(), f_, d_, up_pd_.weights_desc(), std::move(reuse.up), stream_);
    packed_.down = pack(w.down.get(), d_, f_, down_pd_.weights_desc(), std::move(reuse.down), stream_);

    const std::size_t h = std::size_t(m_) * std::size_t(f_);
    gate_.assign(h, 0.0f);
    up_.assign(h, 0.0f);
    act_.assign(h, 0.0f);
    x_mem_ = dnnl::memory(up_pd_.src_desc(), eng, DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(down_pd_.dst_desc(), eng, DNNL_MEMORY_NONE);
    gate_mem_ = dnnl::memory(up_pd_.dst_desc(), eng, gate_.data());
    up_mem_ = dnnl::memory(up_pd_.dst_desc(), eng, up_.data());
    act_mem_ = dnnl::memory(down_pd_.src_desc(), eng, act_.data());
}

void Baseline::forward(const float* x, float* y) {
    x_mem_.set_data_handle(const_cast<float*>(x));
    y_mem_.set_data_handle(y);

    up_mm_.execute(stream_, {{DNNL_ARG_SRC, x_mem_}, {DNNL_ARG_WEIGHTS, packed_.gate},
                             {DNNL_ARG_DST, gate_mem_}});
    up_mm_.execute(stream_, {{DNNL_ARG_SRC, x_mem_}, {DNNL_ARG_WEIGHTS, packed_.up},
                             {DNNL_ARG_DST, up_mem_}});
    stream_.wait();
    swiglu::detail::silu_mul_scalar(gate_.data(), up_.data(), act_.data(), gate_.size());
    down_mm_.execute(stream_, {{DNNL_ARG_SRC, act_mem_}, {DNNL_ARG_WEIGHTS, packed_.down},
                               {DNNL_ARG_DST, y_mem_}});
    stream_.wait();
}

std::string Baseline::implementation() const {
    return std::string(up_pd_.impl_info_str()) + " / " + down_pd_.impl_info_str();
}

double relative_max_diff(const float* a, const float* b, std::size_t n) {
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double da = a[i], db = b[i];
        if (!std::isfinite(da) || !std::isfinite(db)) return INFINITY;
        diff = std::max(diff, std::fabs(da - db));
        scale = std::max(scale, std::fabs(db));
    }
    return scale > 0 ? diff / scale : diff;
}

}  // namespace swiglu_bench
