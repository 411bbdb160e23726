#include "baseline.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>

#include "kernels/convert.hpp"
#include "kernels/f32_silu_mul.hpp"
#include "kernels/kernel_table.hpp"
#include "onednn/matmul.hpp"

namespace swiglu_bench {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

using swiglu::detail::cpu_engine;

// Symmetric quantization of n values to s8 (scale = max|v| / 127, q =
// round(v / scale) to nearest even): the library's plain scalar version, so
// the baseline quantises as a straightforward loop would and matches ours.
float quantize(const float* v, std::int8_t* q, std::size_t n) {
    static const auto scalar =
        swiglu::detail::kernel_table(swiglu::detail::Isa::scalar).quantize_row;
    return scalar(v, q, n);
}

// The packed copy of one (out, in) weight matrix in the layout `want`
// (a K x N = in x out matrix of want's data type). bf16: oneDNN's reorder
// rounds to nearest even. int8: each output channel (a row of `raw`) is
// quantized on its own; its scale goes to `scales`.
dnnl::memory pack(const float* raw, std::int64_t out, std::int64_t in,
                  const dnnl::memory::desc& want, std::vector<float>* scales) {
    dnnl::memory dst(want, cpu_engine());
    if (want.data_type() == dt::s8) {
        std::vector<std::int8_t> q(std::size_t(out) * std::size_t(in));
        scales->resize(std::size_t(out));
        for (std::int64_t o = 0; o < out; ++o)
            (*scales)[std::size_t(o)] = quantize(raw + o * in, q.data() + o * in, std::size_t(in));
        swiglu::detail::reorder(q.data(), {{in, out}, dt::s8, tag::ba}, dst);
        return dst;
    }
    swiglu::detail::reorder(raw, {{in, out}, dt::f32, tag::ba}, dst);
    return dst;
}

// A block format's (out, in) weights with each row (an output channel's
// inputs) rounded through GGUF's blocks: quantised and decoded by the
// format table's functions, ggml's reference rounding (the last block of a
// row padded with zeros, as the library pads it).
std::unique_ptr<float[]> ggml_rounded(const float* raw, std::int64_t out, std::int64_t in,
                                      swiglu::Dtype dtype) {
    namespace sd = swiglu::detail;
    const sd::FormatTraits& t = sd::traits(dtype);
    auto rounded = std::make_unique<float[]>(std::size_t(out) * std::size_t(in));
    const std::size_t blocks = std::size_t((in + t.block - 1) / t.block);
    // max_align_t units: the quantiser wants its blocks aligned.
    std::vector<std::max_align_t> bytes((blocks * t.block_bytes + sizeof(std::max_align_t) - 1) /
                                        sizeof(std::max_align_t));
    std::vector<float> row(blocks * std::size_t(t.block));
    for (std::int64_t o = 0; o < out; ++o) {
        t.quantize(raw + o * in, std::size_t(in), bytes.data());
        t.decode(reinterpret_cast<const unsigned char*>(bytes.data()), row.size(), row.data());
        std::copy_n(row.begin(), in, rounded.get() + o * in);
    }
    return rounded;
}

}  // namespace

dt matmul_src_type(swiglu::Dtype dtype) {
    switch (dtype) {
        case swiglu::Dtype::bf16: return dt::bf16;
        case swiglu::Dtype::int8: return dt::s8;
        default: break;  // f32, and the block formats on their rounded weights
    }
    return dt::f32;
}

Baseline::Baseline(const ShapeWeights& w, const BenchDtype& bench_dtype, std::int64_t tokens,
                   int threads, PackedWeights reuse)
    : bench_dtype_(bench_dtype),
      dtype_(bench_dtype.dtype),
      m_(tokens),
      d_(w.shape.d),
      f_(w.shape.f),
      threads_(std::max(1, threads)) {
    omp_set_num_threads(threads_);
    const swiglu::Dtype dtype = dtype_;  // gate's: it picks the matmuls' types
    auto& eng = cpu_engine();
    stream_ = dnnl::stream(eng);

    // Matmul types: src / weights / dst. bf16: bf16 / bf16 / f32;
    // int8: s8 / s8 / s32; f32 throughout otherwise.
    const dt lp = matmul_src_type(dtype);
    const dt acc = dtype == swiglu::Dtype::int8 ? dt::s32 : dt::f32;
    const dnnl::memory::desc x_md({m_, d_}, lp, tag::ab);
    const dnnl::memory::desc h_md({m_, f_}, acc, tag::ab);
    const dnnl::memory::desc a_md({m_, f_}, lp, tag::ab);
    const dnnl::memory::desc y_md({m_, d_}, acc, tag::ab);
    const dnnl::memory::desc wu_any({d_, f_}, lp, tag::any);
    const dnnl::memory::desc wd_any({f_, d_}, lp, tag::any);

    try {
        up_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(x_md, wu_any, h_md), eng);
        down_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, wd_any, y_md), eng);
    } catch (const dnnl::error& e) {
        if (dtype == swiglu::Dtype::f32) throw;
        throw swiglu::Error(swiglu::Status::unsupported,
                            std::string("baseline: oneDNN has no ") + swiglu::dtype_name(dtype) +
                                " matmul on this CPU (" + e.what() + ")");
    }
    if (matmul_src_type(dtype) != dt::f32) {
        for (const auto* pd : {&up_pd_, &down_pd_}) {
            const std::string impl = pd->impl_info_str();
            if (impl.rfind("ref", 0) == 0)
                throw swiglu::Error(swiglu::Status::unsupported,
                                    std::string("baseline: oneDNN has only its reference ") +
                                        swiglu::dtype_name(dtype) + " matmul on this CPU (" + impl +
                                        ")");
        }
    }
    up_mm_ = dnnl::matmul(up_pd_);
    down_mm_ = dnnl::matmul(down_pd_);

    // Keep the packed weights only if all three have the wanted dtype and
    // layout; otherwise free them all before packing anew.
    const bool keep = reuse.gate && reuse.dtype == bench_dtype_ &&
                      reuse.gate.get_desc() == up_pd_.weights_desc() &&
                      reuse.up.get_desc() == up_pd_.weights_desc() &&
                      reuse.down.get_desc() == down_pd_.weights_desc();
    if (keep) {
        packed_ = std::move(reuse);
    } else {
        reuse = PackedWeights{};
        packed_.dtype = bench_dtype_;
        std::unique_ptr<float[]> rounded;  // one matrix at a time
        auto source = [&](const float* raw, std::int64_t out, std::int64_t in,
                          swiglu::Dtype format) {
            if (!is_grouped(format)) return raw;
            rounded = ggml_rounded(raw, out, in, format);
            return static_cast<const float*>(rounded.get());
        };
        packed_.gate = pack(source(w.gate.get(), f_, d_, dtype), f_, d_, up_pd_.weights_desc(),
                            &packed_.gate_scale);
        packed_.up = pack(source(w.up.get(), f_, d_, dtype), f_, d_, up_pd_.weights_desc(),
                          &packed_.up_scale);
        packed_.down = pack(source(w.down.get(), d_, f_, bench_dtype_.down), d_, f_,
                            down_pd_.weights_desc(), &packed_.down_scale);
    }

    const std::size_t h = std::size_t(m_) * std::size_t(f_);
    const std::size_t xn = std::size_t(m_) * std::size_t(d_);
    gate_.assign(h, 0.0f);
    up_.assign(h, 0.0f);
    act_.assign(h, 0.0f);
    x_mem_ = dnnl::memory(up_pd_.src_desc(), eng, DNNL_MEMORY_NONE);
    y_mem_ = dnnl::memory(down_pd_.dst_desc(), eng, DNNL_MEMORY_NONE);
    switch (dtype) {
        case swiglu::Dtype::q8_0:
        case swiglu::Dtype::q4_0:
        case swiglu::Dtype::q4_k:
        case swiglu::Dtype::q5_k:
        case swiglu::Dtype::q6_k:
        case swiglu::Dtype::f32:
            gate_mem_ = dnnl::memory(up_pd_.dst_desc(), eng, gate_.data());
            up_mem_ = dnnl::memory(up_pd_.dst_desc(), eng, up_.data());
            act_mem_ = dnnl::memory(down_pd_.src_desc(), eng, act_.data());
            break;
        case swiglu::Dtype::bf16: {
            x_lp_.assign(xn * 2, 0);
            act_lp_.assign(h * 2, 0);
            x_mem_.set_data_handle(x_lp_.data());
            gate_mem_ = dnnl::memory(up_pd_.dst_desc(), eng, gate_.data());
            up_mem_ = dnnl::memory(up_pd_.dst_desc(), eng, up_.data());
            act_mem_ = dnnl::memory(down_pd_.src_desc(), eng, act_lp_.data());
            x_f32_mem_ = dnnl::memory({{m_, d_}, dt::f32, tag::ab}, eng, DNNL_MEMORY_NONE);
            act_f32_mem_ = dnnl::memory({{m_, f_}, dt::f32, tag::ab}, eng, act_.data());
            x_cvt_ = dnnl::reorder(x_f32_mem_, x_mem_);
            act_cvt_ = dnnl::reorder(act_f32_mem_, act_mem_);
            break;
        }
        case swiglu::Dtype::int8:
            x_lp_.assign(xn, 0);
            act_lp_.assign(h, 0);
            gate_acc_.assign(h, 0);
            up_acc_.assign(h, 0);
            y_acc_.assign(xn, 0);
            x_scale_.assign(std::size_t(m_), 0.0f);
            act_scale_.assign(std::size_t(m_), 0.0f);
            x_mem_.set_data_handle(x_lp_.data());
            y_mem_.set_data_handle(y_acc_.data());
            gate_mem_ = dnnl::memory(up_pd_.dst_desc(), eng, gate_acc_.data());
            up_mem_ = dnnl::memory(up_pd_.dst_desc(), eng, up_acc_.data());
            act_mem_ = dnnl::memory(down_pd_.src_desc(), eng, act_lp_.data());
            break;
    }
}

void Baseline::forward(const float* x, float* y) {
    switch (dtype_) {
        case swiglu::Dtype::q8_0:
        case swiglu::Dtype::q4_0:
        case swiglu::Dtype::q4_k:
        case swiglu::Dtype::q5_k:
        case swiglu::Dtype::q6_k:
        case swiglu::Dtype::f32: return forward_f32(x, y);
        case swiglu::Dtype::bf16: return forward_bf16(x, y);
        case swiglu::Dtype::int8: return forward_int8(x, y);
    }
}

// x (in x_mem_'s dtype) @ W_gate and @ W_up into gate_mem_, up_mem_.
void Baseline::gate_and_up() {
    up_mm_.execute(
        stream_,
        {{DNNL_ARG_SRC, x_mem_}, {DNNL_ARG_WEIGHTS, packed_.gate}, {DNNL_ARG_DST, gate_mem_}});
    up_mm_.execute(
        stream_, {{DNNL_ARG_SRC, x_mem_}, {DNNL_ARG_WEIGHTS, packed_.up}, {DNNL_ARG_DST, up_mem_}});
    stream_.wait();
}

// act (in act_mem_'s dtype) @ W_down into y_mem_.
void Baseline::down() {
    down_mm_.execute(
        stream_,
        {{DNNL_ARG_SRC, act_mem_}, {DNNL_ARG_WEIGHTS, packed_.down}, {DNNL_ARG_DST, y_mem_}});
    stream_.wait();
}

void Baseline::forward_f32(const float* x, float* y) {
    x_mem_.set_data_handle(const_cast<float*>(x));
    y_mem_.set_data_handle(y);

    gate_and_up();
    swiglu::detail::f32_silu_mul_scalar(gate_.data(), up_.data(), act_.data(), gate_.size());
    down();
}

void Baseline::forward_bf16(const float* x, float* y) {
    x_f32_mem_.set_data_handle(const_cast<float*>(x));
    y_mem_.set_data_handle(y);

    x_cvt_.execute(stream_, x_f32_mem_, x_mem_);
    gate_and_up();
    swiglu::detail::f32_silu_mul_scalar(gate_.data(), up_.data(), act_.data(), gate_.size());
    act_cvt_.execute(stream_, act_f32_mem_, act_mem_);
    down();
}

void Baseline::forward_int8(const float* x, float* y) {
    const std::size_t d = std::size_t(d_), f = std::size_t(f_);
    auto* xq = reinterpret_cast<std::int8_t*>(x_lp_.data());
    auto* aq = reinterpret_cast<std::int8_t*>(act_lp_.data());
    for (std::size_t r = 0; r < std::size_t(m_); ++r)
        x_scale_[r] = quantize(x + r * d, xq + r * d, d);

    gate_and_up();
    const float* gs = packed_.gate_scale.data();
    const float* us = packed_.up_scale.data();
    for (std::size_t r = 0; r < std::size_t(m_); ++r) {
        const float s = x_scale_[r];
        for (std::size_t c = 0; c < f; ++c) {
            gate_[r * f + c] = float(gate_acc_[r * f + c]) * (s * gs[c]);
            up_[r * f + c] = float(up_acc_[r * f + c]) * (s * us[c]);
        }
    }
    swiglu::detail::f32_silu_mul_scalar(gate_.data(), up_.data(), act_.data(), gate_.size());
    for (std::size_t r = 0; r < std::size_t(m_); ++r)
        act_scale_[r] = quantize(act_.data() + r * f, aq + r * f, f);
    down();
    const float* ds = packed_.down_scale.data();
    for (std::size_t r = 0; r < std::size_t(m_); ++r) {
        const float s = act_scale_[r];
        for (std::size_t c = 0; c < d; ++c) y[r * d + c] = float(y_acc_[r * d + c]) * (s * ds[c]);
    }
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
