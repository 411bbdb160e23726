#include "gemm_ceiling.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "baseline.hpp"
#include "interleaved_timing.hpp"
#include "onednn/matmul.hpp"

namespace swiglu_bench {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct Types {
    dt src, weights, dst;
};

Types types_of(swiglu::Dtype dtype) {
    const dt src = matmul_src_type(dtype);
    return {src, src, src == dt::s8 ? dt::s32 : dt::f32};
}

// Small values of the memory's type, so no FLOP meets a denormal or an
// overflow (the rate of these kernels does not depend on the data otherwise).
void fill(const dnnl::memory& mem) {
    const std::size_t bytes = mem.get_desc().get_size();
    auto* p = static_cast<unsigned char*>(mem.get_data_handle());
    switch (mem.get_desc().data_type()) {
        case dt::f32: {
            const float v = 1.0f / 64;
            for (std::size_t i = 0; i + 4 <= bytes; i += 4) std::memcpy(p + i, &v, 4);
            break;
        }
        case dt::bf16: {
            const unsigned short v = 0x3c80;  // 1/64
            for (std::size_t i = 0; i + 2 <= bytes; i += 2) std::memcpy(p + i, &v, 2);
            break;
        }
        default: std::fill(p, p + bytes, static_cast<unsigned char>(1)); break;
    }
}

}  // namespace

bool has_gemm_ceiling(swiglu::Dtype dtype) {
    return dtype == swiglu::Dtype::f32 || dtype == swiglu::Dtype::bf16 ||
           dtype == swiglu::Dtype::int8;
}

GemmCeiling::GemmCeiling(std::int64_t tokens, std::int64_t d, std::int64_t f, swiglu::Dtype dtype,
                         int threads)
    : m_(tokens), d_(d), f_(f), dtype_(dtype), threads_(std::max(1, threads)) {
    if (!has_gemm_ceiling(dtype))
        throw swiglu::Error(
            swiglu::Status::unsupported,
            std::string("GEMM ceiling: oneDNN has no ") + swiglu::dtype_name(dtype) + " matmul");
    omp_set_num_threads(threads_);
    const auto& eng = swiglu::detail::cpu_engine();
    stream_ = dnnl::stream(eng);
    const Types t = types_of(dtype);
    const dnnl::memory::desc src_md({m_, d_}, t.src, tag::ab);
    const dnnl::memory::desc w_any({d_, 2 * f_}, t.weights, tag::any);
    const dnnl::memory::desc dst_md({m_, 2 * f_}, t.dst, tag::ab);
    try {
        pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, w_any, dst_md), eng);
    } catch (const dnnl::error& e) {
        throw swiglu::Error(swiglu::Status::unsupported,
                            std::string("GEMM ceiling: no ") + swiglu::dtype_name(dtype) +
                                " matmul on this CPU (" + e.what() + ")");
    }
    if (dtype != swiglu::Dtype::f32 && std::string(pd_.impl_info_str()).rfind("ref", 0) == 0)
        throw swiglu::Error(swiglu::Status::unsupported,
                            std::string("GEMM ceiling: oneDNN has only its reference ") +
                                swiglu::dtype_name(dtype) + " matmul on this CPU");
    mm_ = dnnl::matmul(pd_);
    src_ = dnnl::memory(pd_.src_desc(), eng);
    weights_ = dnnl::memory(pd_.weights_desc(), eng);  // packed: filled in place
    dst_ = dnnl::memory(pd_.dst_desc(), eng);
    fill(src_);
    fill(weights_);
}

void GemmCeiling::run() {
    omp_set_num_threads(threads_);
    mm_.execute(stream_,
                {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}});
    stream_.wait();
}

CeilingShare ceiling_share(const std::function<void()>& ours, double our_flops,
                           GemmCeiling& ceiling) {
    // The first call faults in the output's pages and oneDNN's scratchpad.
    ceiling.run();
    const PairTiming pt = time_interleaved(ours, [&ceiling] { ceiling.run(); });
    // ratio = t_ceiling / t_ours per round; each rate is its own FLOPs / time.
    const double scale = 100.0 * our_flops / ceiling.flops();
    CeilingShare c;
    c.pct = scale * pt.ratio.median;
    c.pct_p10 = scale * pt.ratio.p10;
    c.pct_p90 = scale * pt.ratio.p90;
    c.gflops = ceiling.flops() / pt.b.median * 1e-9;
    c.noisy = pt.noisy;
    c.others = pt.others;
    return c;
}

}  // namespace swiglu_bench
