// The GEMM ceiling of a compute-bound row: one plain oneDNN matmul of shape
// (M x d) * (d x 2f) -- the block's gate and up as one GEMM -- with its
// weights prepacked once, on the same threads and dtype, timed beside the
// row. The block does nothing but GEMMs and an elementwise pass, so a fused
// block should run at least at this GEMM's FLOP rate: a row's ceil% is
// 100 * its GFLOP/s / the ceiling's GFLOP/s (the FLOPs of each counted on
// its own: 6 M d f for the block's forward, 12 M d f for its backward,
// 4 M d f for the ceiling).
//
// Dtypes: f32 (f32 x f32 -> f32), bf16 (bf16 x bf16 -> f32: the source
// already bf16, its conversion not timed) and int8 (s8 x s8 -> s32). The
// GGUF block formats have no oneDNN matmul, so no ceiling.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "swiglu/swiglu.hpp"

namespace swiglu_bench {

// Rows with at least this many tokens are compute-bound on every shape and
// report ceil% (issue 45: M >= 128).
inline constexpr std::int64_t kCeilingMinTokens = 128;

bool has_gemm_ceiling(swiglu::Dtype dtype);

class GemmCeiling {
public:
    // Creates the matmul and packs a (d, 2f) weight for `threads` OpenMP
    // threads. Throws swiglu::Error(Status::unsupported) for a dtype without
    // a ceiling, or when oneDNN has only its reference matmul for it here.
    GemmCeiling(std::int64_t tokens, std::int64_t d, std::int64_t f, swiglu::Dtype dtype,
                int threads);

    // One matmul; sets OpenMP's thread count first (the block's pool and the
    // baselines may have changed it).
    void run();

    double flops() const { return 4.0 * double(m_) * double(d_) * double(f_); }
    std::int64_t tokens() const { return m_; }
    int threads() const { return threads_; }
    swiglu::Dtype dtype() const { return dtype_; }
    std::string implementation() const { return pd_.impl_info_str(); }

private:
    std::int64_t m_, d_, f_;
    swiglu::Dtype dtype_;
    int threads_;
    dnnl::stream stream_;
    dnnl::matmul::primitive_desc pd_;
    dnnl::matmul mm_;
    dnnl::memory src_, weights_, dst_;
};

// A row's share of its ceiling, the two timed interleaved
// (interleaved_timing.hpp) so that the host's drift cancels.
struct CeilingShare {
    double pct = 0, pct_p10 = 0, pct_p90 = 0;  // 100 * our GFLOP/s / the ceiling's
    double gflops = 0;                         // the ceiling's rate
    bool noisy = false;                        // the ratios' spread stayed over 20 %
    double others = -1;                        // as PairTiming::others
};

// `ours`: one call of the row, doing `our_flops` FLOPs.
CeilingShare ceiling_share(const std::function<void()>& ours, double our_flops,
                           GemmCeiling& ceiling);

}  // namespace swiglu_bench
