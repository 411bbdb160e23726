// ffn/<shape>/<dtype>/M:<tokens>/T:<threads> and
// baseline/<shape>/<dtype>/M:<tokens>/T:<threads> (every entry of
// all_dtypes(): the public Dtypes and the q4_k_m mix), and the --profile
// table.
//
// Counters (per call, from this file's own clock around the timed loop):
//   ns_per_call       wall time of one forward()
//   GFLOPs            6 M d f / time, GFLOP/s (int8: integer GOP/s)
//   GBs               weight bytes of the dtype / time, GB/s: 3 d f x 4 (f32),
//                     2 (bf16), 1 (int8) bytes, GGUF's block bytes for the
//                     block formats (shapes.hpp; q4_k_m: its two formats')
//   roofline_pct      100 * t_roofline / time, with t_roofline =
//                     max(FLOPs / peak(dtype, T), weight bytes(dtype) /
//                     read rate(T)) (roofline.hpp), peak(dtype) being the f32
//                     FMA, bf16 vdpbf16ps or int8 dot-product rate (block
//                     formats: int8), the read rate that of the level holding
//                     the weights (glass and cyber: L2/L3; llama7b: DRAM).
//   pct_of_bf16_peak  int8 and block-format rows: 100 * GFLOPs / peak(bf16, T),
//                     how they compare with what bf16 could do at most.
// on ffn/llama7b rows of one token (the weights stream from DRAM), the
// share of a plain read of the same bytes, the two timed interleaved
// (read_beside.hpp): read_pct (_p10, _p90, read_noisy), read_GBs;
// on K-quant rows (q4_k_m too) of M >= 128, their rate against the q4_0
// block of the same shape and threads, the two interleaved: q4_0_pct
// (_p10, _p90, q4_0_noisy), 100 * our GFLOP/s / q4_0's (issue 42's target);
// and on ffn/ rows of M >= 128 in f32, bf16 and int8, the share of the GEMM
// ceiling (gemm_ceiling.hpp), our calls and the ceiling's interleaved
// (interleaved_timing.hpp) after the row's own loop:
//   ceil_pct          100 * GFLOP/s / the ceiling's GFLOP/s, from the median
//                     of the rounds' time ratios (ceil_pct_p10, _p90: their
//                     spread; ceil_noisy = 1 when it stayed over 20 %)
//   ceil_GFLOPs       the ceiling's own rate (median of its batches)
#include <benchmark/benchmark.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ffn_bench.hpp"

#include "baseline.hpp"
#include "bench_dtypes.hpp"
#include "gemm_ceiling.hpp"
#include "interleaved_timing.hpp"
#include "machine_probe.hpp"
#include "read_beside.hpp"
#include "ridge_limits.hpp"
#include "roofline.hpp"
#include "shapes.hpp"
#include "swiglu/swiglu.hpp"
#include "weights.hpp"

namespace swiglu_bench {

swiglu::BuildPolicy& build_policy() {
    static swiglu::BuildPolicy policy;
    return policy;
}

swiglu::Options bench_options(int threads, const BenchDtype& bd) {
    swiglu::Options options;
    options.threads = threads;
    options.dtype = bd.dtype;
    options.build = build_policy();
    if (bd.mixed()) options.down_dtype = bd.down;
    return options;
}

namespace {

using Clock = std::chrono::steady_clock;
using swiglu::Dtype;

// max |y_ffn - y_base| / max |y_base| allowed when the Ffn is checked against
// the baseline of its dtype. bf16 and int8 round (and quantize) at slightly
// different points in the two, hence the wider bounds.
double tolerance(Dtype dtype) {
    switch (dtype) {
        case Dtype::bf16: return 2e-2;
        case Dtype::int8: return 6e-2;
        // vs the f32 baseline on the same rounded weights: what quantising x
        // and act per block of 32 costs (test_dtype: ~1e-2).
        case Dtype::q8_0:
        case Dtype::q4_0: return 4e-2;
        // The same, x and act quantised per block of 256 (Q8_K: s8, one f32
        // scale each) instead of 32. A block's step is max|v| / 127 of its
        // values, so over 8 times as many values the step grows with the
        // largest of them: for x uniform in [-1, 1] hardly at all, for act
        // (SiLU(gate) * up, heavier tails) by up to ~2x. Each output sums d
        // or f such rounding errors of random sign, so the error relative
        // to max|y| stays of the order of 1/127 per phase: measured 1.0e-2
        // to 2.0e-2 on glass and cyber, 1 to 512 tokens, every K format and
        // q4_k_m. The bound leaves 3x over the worst.
        case Dtype::q4_k:
        case Dtype::q5_k:
        case Dtype::q6_k: return 6e-2;
        case Dtype::f32: break;
    }
    return 1e-4;
}

// What one check of the Ffn against a baseline found.
struct Verified {
    double diff = 0;
    BenchDtype against = BenchDtype::of(Dtype::f32);  // dtype of the baseline used (f32
                                                      // when the dtype's own can't run here)
};

// What the benchmarks of one shape share: its weights, at most one Ffn (and
// the q4_0 block the K-quant rows are timed beside), one Baseline and one
// GEMM ceiling built from them, the input and output buffers, and which
// (tokens, threads, dtype) have been checked against the baseline. One of
// each keeps llama7b (541 MB per f32 copy) at most three copies and two
// thirds alive: the source weights, the Ffn's packed copy, the baseline's
// packed copy and the ceiling's (d, 2f) weight (half or a quarter of that
// for bf16 and int8; the q4_0 block: 76 MB). Benchmarks are registered shape by
// shape, then dtype by dtype, then threads by threads, so each object is
// built once and reused across token counts.
class BlockFixture {
public:
    void use_shape(const Shape& s) {
        if (w_ && std::strcmp(w_->shape.name, s.name) == 0) return;
        base_.reset();
        ffn_.reset();
        q4_0_.reset();
        ceiling_.reset();
        w_.reset();
        verified_.clear();
        ffn_unsupported_.clear();
        base_unsupported_.clear();
        w_ = make_weights(s);
        x_ = make_input(kMaxTokens, s.d, 42);
        y_.assign(x_.size(), 0.0f);
        y_ref_.assign(x_.size(), 0.0f);
    }

    const Shape& shape() const { return w_->shape; }
    const float* x() const { return x_.data(); }
    float* y() { return y_.data(); }

    // `threads` as passed to swiglu::Options (0 = library default). Throws
    // swiglu::Error, e.g. Status::unsupported for int8 on a CPU without
    // AVX512-VNNI (remembered: later calls for that dtype throw at once).
    swiglu::Ffn& ffn(int threads, const BenchDtype& dtype) {
        if (ffn_ && ffn_option_ == threads && ffn_dtype_ == dtype) return *ffn_;
        ffn_.reset();
        if (auto it = ffn_unsupported_.find(dtype); it != ffn_unsupported_.end())
            throw swiglu::Error(swiglu::Status::unsupported, it->second);
        try {
            ffn_ = make_ffn(threads, dtype);
        } catch (const swiglu::Error& e) {
            if (e.status() == swiglu::Status::unsupported) ffn_unsupported_[dtype] = e.what();
            throw;
        }
        ffn_option_ = threads;
        ffn_dtype_ = dtype;
        return *ffn_;
    }

    // The same shape's block in q4_0 on `threads` (the option as ffn()'s),
    // that the K-quant rows are timed beside (q4_0_pct); kept apart from
    // ffn() so that both are alive at once (llama7b: 76 MB), rebuilt only
    // when the shape or the threads change. Throws what ffn() throws.
    const swiglu::Ffn& q4_0_ffn(int threads) {
        if (q4_0_ && q4_0_option_ == threads) return *q4_0_;
        q4_0_.reset();
        q4_0_ = make_ffn(threads, BenchDtype::of(Dtype::q4_0));
        q4_0_option_ = threads;
        return *q4_0_;
    }

    // Also sets OpenMP's thread count for the calls that follow. Throws
    // swiglu::Error(Status::unsupported) when oneDNN can't run this dtype's
    // baseline here (remembered, like ffn()).
    Baseline& baseline(std::int64_t tokens, int threads, const BenchDtype& dtype) {
        if (!base_ || base_->tokens() != tokens || base_->threads() != threads ||
            base_->dtype() != dtype) {
            if (auto it = base_unsupported_.find(dtype); it != base_unsupported_.end())
                throw swiglu::Error(swiglu::Status::unsupported, it->second);
            // Packed weights of another dtype are dropped before packing anew.
            PackedWeights reuse =
                base_ && base_->dtype() == dtype ? base_->take_packed() : PackedWeights{};
            base_.reset();
            try {
                base_ = std::make_unique<Baseline>(*w_, dtype, tokens, threads, std::move(reuse));
            } catch (const swiglu::Error& e) {
                if (e.status() == swiglu::Status::unsupported) base_unsupported_[dtype] = e.what();
                throw;
            }
        }
        omp_set_num_threads(threads);
        return *base_;
    }

    // The GEMM ceiling of a row (gemm_ceiling.hpp), kept for the next row of
    // the same tokens, threads and dtype. Throws what GemmCeiling throws.
    GemmCeiling& ceiling(std::int64_t tokens, int threads, Dtype dtype) {
        if (!ceiling_ || ceiling_->tokens() != tokens || ceiling_->threads() != threads ||
            ceiling_->dtype() != dtype) {
            ceiling_.reset();  // its packed weight first
            ceiling_ =
                std::make_unique<GemmCeiling>(tokens, w_->shape.d, w_->shape.f, dtype, threads);
        }
        return *ceiling_;
    }

    // Once per (tokens, ffn option, dtype): runs the Ffn and the baseline of
    // the same dtype on the same input and aborts if they disagree (when the
    // dtype's baseline can't run here, the f32 baseline is the reference,
    // with the dtype's tolerance). Throws what ffn() throws.
    Verified verify(std::int64_t tokens, int ffn_threads, int base_threads,
                    const BenchDtype& dtype) {
        const auto key = std::make_tuple(tokens, ffn_threads, dtype);
        if (auto it = verified_.find(key); it != verified_.end()) return it->second;
        const std::size_t n = std::size_t(tokens) * std::size_t(w_->shape.d);
        std::fill(y_.begin(), y_.begin() + std::ptrdiff_t(n), NAN);
        ffn(ffn_threads, dtype).forward(x_.data(), y_.data(), tokens);
        Verified v;
        v.against = dtype;
        try {
            baseline(tokens, base_threads, dtype).forward(x_.data(), y_ref_.data());
        } catch (const swiglu::Error& e) {
            if (e.status() != swiglu::Status::unsupported) throw;
            v.against = BenchDtype::of(Dtype::f32);
            baseline(tokens, base_threads, v.against).forward(x_.data(), y_ref_.data());
        }
        v.diff = relative_max_diff(y_.data(), y_ref_.data(), n);
        const double tol = tolerance(dtype.dtype);
        if (!(v.diff < tol)) {
            std::size_t worst = 0;
            for (std::size_t i = 0; i < n; ++i)
                if (!(std::fabs(y_[i] - y_ref_[i]) <= std::fabs(y_[worst] - y_ref_[worst])))
                    worst = i;
            std::fprintf(stderr,
                         "\nFATAL: swiglu::Ffn (%s) output disagrees with the oneDNN %s baseline\n"
                         "  shape %s (d=%lld, f=%lld), tokens %lld, Ffn threads option %d\n"
                         "  max|y_ffn - y_base| / max|y_base| = %.3g (tolerance %.0e)\n"
                         "  worst element %zu (row %zu, col %zu): ffn %.8g, baseline %.8g\n",
                         dtype.name, v.against.name, w_->shape.name, (long long)w_->shape.d,
                         (long long)w_->shape.f, (long long)tokens, ffn_threads, v.diff, tol, worst,
                         worst / std::size_t(w_->shape.d), worst % std::size_t(w_->shape.d),
                         double(y_[worst]), double(y_ref_[worst]));
            std::fflush(stderr);
            std::abort();
        }
        verified_.emplace(key, v);
        return v;
    }

private:
    // The shape's block in `dtype` from its f32 weights.
    std::unique_ptr<swiglu::Ffn> make_ffn(int threads, const BenchDtype& dtype) const {
        const std::int64_t d = w_->shape.d, f = w_->shape.f;
        return std::make_unique<swiglu::Ffn>(swiglu::WeightView::out_in(w_->gate.get(), f, d),
                                             swiglu::WeightView::out_in(w_->up.get(), f, d),
                                             swiglu::WeightView::out_in(w_->down.get(), d, f),
                                             bench_options(threads, dtype));
    }

    std::unique_ptr<ShapeWeights> w_;
    std::unique_ptr<swiglu::Ffn> ffn_;
    int ffn_option_ = -1;
    BenchDtype ffn_dtype_ = BenchDtype::of(Dtype::f32);
    std::unique_ptr<swiglu::Ffn> q4_0_;
    int q4_0_option_ = -1;
    std::unique_ptr<Baseline> base_;
    std::unique_ptr<GemmCeiling> ceiling_;
    std::vector<float> x_, y_, y_ref_;
    std::map<std::tuple<std::int64_t, int, BenchDtype>, Verified> verified_;
    std::map<BenchDtype, std::string> ffn_unsupported_, base_unsupported_;
};

BlockFixture& fixture() {
    static BlockFixture fx;
    return fx;
}

// 100 * achieved rate / bf16 peak (0 when unknown).
double pct_of_bf16_peak(const Shape& s, std::int64_t tokens, int threads, double ns) {
    const double peak = machine().peak(threads, Dtype::bf16);
    return peak > 0 ? 100.0 * s.flops(tokens) / ns / peak : 0;
}

void set_counters(benchmark::State& st, const Shape& s, std::int64_t tokens, int threads,
                  const BenchDtype& dtype, double ns) {
    st.counters["ns_per_call"] = ns;
    st.counters["GFLOPs"] = s.flops(tokens) / ns;
    st.counters["GBs"] = weight_bytes(s, dtype) / ns;
    st.counters["roofline_pct"] = 100.0 * roofline(s, tokens, threads, dtype).seconds() * 1e9 / ns;
    if (dtype.dtype == Dtype::int8 || dtype.grouped())
        st.counters["pct_of_bf16_peak"] = pct_of_bf16_peak(s, tokens, threads, ns);
}

// Whether a row (M tokens, that dtype) is timed against the GEMM ceiling.
bool ceiling_row(std::int64_t tokens, const BenchDtype& dtype) {
    return tokens >= kCeilingMinTokens && !dtype.mixed() && has_gemm_ceiling(dtype.dtype);
}

// Our block's calls and the GEMM ceiling's, interleaved; nullopt where the
// ceiling can't run here (oneDNN without that matmul).
std::optional<CeilingShare> ffn_ceiling_share(const Shape& s, std::int64_t tokens,
                                              const swiglu::Ffn& ffn, const BenchDtype& dtype,
                                              const float* x, float* y) {
    try {
        GemmCeiling& ceiling = fixture().ceiling(tokens, ffn.threads(), dtype.dtype);
        return ceiling_share([&] { ffn.forward(x, y, tokens); }, s.flops(tokens), ceiling);
    } catch (const swiglu::Error& e) {
        if (e.status() != swiglu::Status::unsupported) throw;
    }
    return std::nullopt;
}

// Whether a row is timed against the q4_0 block of its shape: the
// K-quants' (and Q4_K_M's) prefill.
bool q4_0_row(std::int64_t tokens, const BenchDtype& dtype) {
    return tokens >= kCeilingMinTokens && dtype.k_quant();
}

// The K-quant row's calls and the q4_0 block's, interleaved (issue 42's
// prefill target: >= 90 % of q4_0's rate): ratio = t_q4_0 / t_ours, the
// same FLOPs. Measured once per `key`; nullopt where q4_0 can't run here.
std::optional<PairTiming> q4_0_share(const std::string& key, const swiglu::Ffn& ffn,
                                     std::int64_t tokens, int threads, const float* x, float* y) {
    static std::map<std::string, PairTiming> measured;
    if (const auto it = measured.find(key); it != measured.end()) return it->second;
    try {
        const swiglu::Ffn& q4_0 = fixture().q4_0_ffn(threads);
        q4_0.forward(x, y, tokens);  // its scratch made
        return measured[key] = time_interleaved([&] { ffn.forward(x, y, tokens); },
                                                [&] { q4_0.forward(x, y, tokens); });
    } catch (const swiglu::Error& e) {
        if (e.status() != swiglu::Status::unsupported) throw;
    }
    return std::nullopt;
}

bool is_big(const Shape& s) { return s.d * s.f >= (std::int64_t(1) << 24); }

// Whether a row is timed against a plain read of its weight bytes
// (read_beside.hpp): decode of the shapes whose weights stream from DRAM.
bool read_row(const Shape& s, std::int64_t tokens) { return tokens == 1 && is_big(s); }

// Fixed iteration counts for llama7b (one f32 call: ~20 ms at M=1 up to
// ~1.5 s at M=512 on one core; bf16 and int8 take less).
benchmark::IterationCount big_iterations(std::int64_t tokens) {
    if (tokens <= 1) return 10;
    if (tokens <= 16) return 8;
    if (tokens <= 64) return 4;
    if (tokens <= 128) return 3;
    return 2;
}

// Runs `body`; what it throws skips this benchmark with the message
// instead of ending the whole run.
template <class Body>
void skip_on_error(benchmark::State& st, Body&& body) {
    try {
        body();
    } catch (const std::exception& e) {
        st.SkipWithError(e.what());
    }
}

void bm_baseline(benchmark::State& st, const Shape* s, BenchDtype dtype, std::int64_t tokens,
                 int threads) {
    skip_on_error(st, [&] {
        BlockFixture& fx = fixture();
        fx.use_shape(*s);
        fx.baseline(tokens, threads, dtype);  // throws here if it can't run
        fx.verify(tokens, threads, threads, dtype);
        Baseline& base = fx.baseline(tokens, threads, dtype);  // sets omp_set_num_threads
        const float* x = fx.x();
        float* y = fx.y();
        base.forward(x, y);  // warm
        const auto t0 = Clock::now();
        for (auto _ : st) base.forward(x, y);
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        benchmark::DoNotOptimize(y[0]);
        // A grouped dtype's baseline streams f32 weights (baseline.hpp).
        set_counters(st, *s, tokens, threads, dtype.grouped() ? BenchDtype::of(Dtype::f32) : dtype,
                     ns / double(st.iterations()));
    });
}

void bm_ffn(benchmark::State& st, const Shape* s, BenchDtype dtype, std::int64_t tokens,
            int threads) {
    skip_on_error(st, [&] {
        BlockFixture& fx = fixture();
        fx.use_shape(*s);
        fx.verify(tokens, threads, threads, dtype);
        const swiglu::Ffn& ffn = fx.ffn(threads, dtype);
        const float* x = fx.x();
        float* y = fx.y();
        ffn.forward(x, y, tokens);  // warm
        const auto t0 = Clock::now();
        for (auto _ : st) ffn.forward(x, y, tokens);
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        benchmark::DoNotOptimize(y[0]);
        set_counters(st, *s, tokens, threads, dtype, ns / double(st.iterations()));
        // The row's name: its interleaved shares are measured once per row,
        // though Google Benchmark may call this function more than once.
        const std::string key = std::string(s->name) + "/" + dtype.name + "/" +
                                std::to_string(tokens) + "/" + std::to_string(threads);
        if (read_row(*s, tokens))
            add_read_counters(
                st, key, [&ffn, x, y, tokens] { ffn.forward(x, y, tokens); },
                weight_bytes(*s, dtype), ffn.threads(), kFreshWindows);
        if (q4_0_row(tokens, dtype))
            if (const auto pt = q4_0_share(key, ffn, tokens, threads, x, y)) {
                st.counters["q4_0_pct"] = 100 * pt->ratio.median;
                st.counters["q4_0_pct_p10"] = 100 * pt->ratio.p10;
                st.counters["q4_0_pct_p90"] = 100 * pt->ratio.p90;
                st.counters["q4_0_noisy"] = pt->doubtful() ? 1 : 0;
            }
        if (!ceiling_row(tokens, dtype)) return;
        if (const auto c = ffn_ceiling_share(*s, tokens, ffn, dtype, x, y)) {
            st.counters["ceil_pct"] = c->pct;
            st.counters["ceil_pct_p10"] = c->pct_p10;
            st.counters["ceil_pct_p90"] = c->pct_p90;
            st.counters["ceil_GFLOPs"] = c->gflops;
            st.counters["ceil_noisy"] = c->noisy ? 1 : 0;
        }
    });
}

int affinity_count() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return std::max(1, CPU_COUNT(&set));
}

// ---------------------------------------------------------------- --profile

// "12.3" or "-" for an unknown (negative) value.
std::string fixed1(double v) {
    char buf[32] = "-";
    if (v >= 0) std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

}  // namespace

LibraryInfo library_info() {
    LibraryInfo info;
    info.threads_default = affinity_count();
    const Shape s = all_shapes().front();
    std::unique_ptr<ShapeWeights> w;
    try {
        w = make_weights(s);
    } catch (const std::exception& e) {
        info.error = e.what();
        return info;
    }
    for (Dtype dtype : swiglu::kDtypes) {
        const int i = int(dtype);
        try {
            swiglu::Ffn ffn(swiglu::WeightView::out_in(w->gate.get(), s.f, s.d),
                            swiglu::WeightView::out_in(w->up.get(), s.f, s.d),
                            swiglu::WeightView::out_in(w->down.get(), s.d, s.f),
                            bench_options(0, BenchDtype::of(dtype)));
            const swiglu::Implementation impl = ffn.implementation();
            info.dtype_matmul[i] = impl.matmul;
            if (dtype == Dtype::f32) {
                info.threads_default = ffn.threads();
                info.matmul = impl.matmul;
                info.activation = impl.activation;
            }
        } catch (const std::exception& e) {
            info.dtype_error[i] = e.what();
            if (dtype == Dtype::f32) info.error = e.what();
        }
    }
    return info;
}

std::vector<int> bench_thread_counts(int threads_default) {
    std::vector<int> t = {1, 2};
    if (threads_default > 2) t.push_back(threads_default);
    return t;
}

void register_ffn_benchmarks(bool quick, const std::vector<int>& threads,
                             const std::vector<BenchDtype>& dtypes) {
    for (const Shape& s : all_shapes()) {
        if (quick && is_big(s)) continue;
        for (const BenchDtype& dtype : dtypes) {
            for (int t : threads) {
                for (std::int64_t m : tokens_for(dtype)) {
                    const std::string suffix = std::string(s.name) + "/" + dtype.name +
                                               "/M:" + std::to_string(m) +
                                               "/T:" + std::to_string(t);
                    const Shape* sp = &s;
                    benchmark::internal::Benchmark* b[2] = {
                        benchmark::RegisterBenchmark(("baseline/" + suffix).c_str(),
                                                     [sp, dtype, m, t](benchmark::State& st) {
                                                         bm_baseline(st, sp, dtype, m, t);
                                                     }),
                        benchmark::RegisterBenchmark(("ffn/" + suffix).c_str(),
                                                     [sp, dtype, m, t](benchmark::State& st) {
                                                         bm_ffn(st, sp, dtype, m, t);
                                                     }),
                    };
                    for (auto* bm : b) {
                        bm->UseRealTime();
                        if (is_big(s)) {
                            bm->Unit(benchmark::kMillisecond)->Iterations(big_iterations(m));
                        } else {
                            bm->Unit(benchmark::kMicrosecond)->MinTime(0.2);
                        }
                    }
                }
            }
        }
    }
}

// The profile's token counts: decode, a small batch and a prefill. The
// quick profile leaves the K-quants' prefill out: their four entries (q4_k,
// q5_k, q6_k, q4_k_m) would add eight 512-token rows to a smoke run.
std::vector<std::int64_t> profile_tokens(const BenchDtype& dtype, bool quick) {
    if (quick && dtype.k_quant()) return {1, 16};
    return {1, 16, 512};
}

// The flags column: noisy (the spread that matters stayed wide), busy
// (other processes took over kBusyCpus CPUs' worth of time meanwhile).
std::string row_flags(const PairTiming& pt) {
    std::string flags;
    if (pt.noisy) flags += "noisy ";
    if (pt.others > kBusyCpus) flags += "busy";
    return flags;
}

// Calls body(shape, dtype, ffn) for each shape (llama7b unless `quick`) and
// dtype, ffn on the library's default threads; a dtype this CPU can't run
// gets a "skipped" row instead. One shape's weights are alive at a time.
template <class Body>
void for_each_block(bool quick, const std::vector<BenchDtype>& dtypes, Body&& body) {
    BlockFixture& fx = fixture();
    for (const Shape& s : all_shapes()) {
        if (quick && is_big(s)) continue;
        fx.use_shape(s);
        for (const BenchDtype& dtype : dtypes) {
            swiglu::Ffn* ffn = nullptr;
            try {
                ffn = &fx.ffn(0, dtype);
            } catch (const swiglu::Error& e) {
                if (e.status() != swiglu::Status::unsupported) throw;
                std::printf("%-8s %-6s   skipped: %s\n", s.name, dtype.name, e.what());
                std::fflush(stdout);
                continue;
            }
            body(s, dtype, ffn);
        }
    }
}

int run_profile(bool quick, const std::vector<BenchDtype>& dtypes) {
    const MachineProbe& probe = machine();
    print_probe(probe);
    const double load_before = others_load(0.5);
    std::printf("\n%-8s %-6s %5s %3s %10s %5s %9s %8s %7s %7s %10s %5s %9s %6s %6s %6s %s\n",
                "shape", "dtype", "M", "T", "ms/call", "+-%", "GFLOP/s", "GB/s", "roof%", "bf16pk%",
                "base_ms", "speedup", "+-%", "ceil%", "read%", "others", "flags");
    std::fflush(stdout);
    std::vector<std::string> notes;
    BlockFixture& fx = fixture();
    const auto t_start = Clock::now();
    try {
        for_each_block(quick, dtypes, [&](const Shape& s, BenchDtype dtype, swiglu::Ffn* ffn) {
            const char* dn = dtype.name;
            const int threads = ffn->threads();
            const swiglu::Implementation impl = ffn->implementation();
            std::string base_impl, diffs;
            for (std::int64_t m : profile_tokens(dtype, quick)) {
                const Verified v = fx.verify(m, 0, threads, dtype);
                ffn = &fx.ffn(0, dtype);
                const float* x = fx.x();
                float* y = fx.y();
                std::function<void()> base_call;
                try {
                    Baseline& base = fx.baseline(m, threads, dtype);
                    base_impl = base.implementation();
                    base_call = [&base, x, y] { base.forward(x, y); };
                } catch (const swiglu::Error& e) {
                    if (e.status() != swiglu::Status::unsupported) throw;
                    base_impl = std::string("not run: ") + e.what();
                }
                // ffn and baseline interleaved: both see the same machine.
                const PairTiming pt =
                    time_interleaved([ffn, x, y, m] { ffn->forward(x, y, m); }, base_call);
                const double t_ffn = pt.a.median;
                const double t_base = pt.b.samples > 0 ? pt.b.median : NAN;
                const double roof = roofline(s, m, threads, dtype).seconds();
                char bf16pk[16] = "-";
                if (dtype.dtype == Dtype::int8 || dtype.grouped())
                    std::snprintf(bf16pk, sizeof bf16pk, "%.1f",
                                  pct_of_bf16_peak(s, m, threads, t_ffn * 1e9));
                char base_ms[32] = "-", base_pm[16] = "-", speedup[32] = "-";
                if (t_base == t_base) {  // not NaN: the baseline ran
                    std::snprintf(base_ms, sizeof base_ms, "%.4g", t_base * 1e3);
                    std::snprintf(base_pm, sizeof base_pm, "%.0f", 50 * pt.ratio.spread());
                    // A ratio the spread doesn't support, or measured while
                    // other processes took a core's share (under load an
                    // OpenMP baseline waits for a preempted thread at each
                    // barrier: glass measured 1658x, consistently), is not
                    // printed at all: "(?)", and the row flagged. In
                    // parentheses it had still reached the user (8903x at
                    // glass q4_0, one token, beside a build).
                    const bool doubtful = pt.doubtful();
                    if (doubtful)
                        std::snprintf(speedup, sizeof speedup, "(?)");
                    else
                        std::snprintf(speedup, sizeof speedup, "%.2fx", pt.ratio.median);
                }
                std::string flags = row_flags(pt);
                char ceil[16] = "-";
                if (ceiling_row(m, dtype)) {
                    if (const auto c = ffn_ceiling_share(s, m, *ffn, dtype, x, y)) {
                        const bool doubtful = c->noisy || c->others > kBusyCpus;
                        if (doubtful)
                            std::snprintf(ceil, sizeof ceil, "(?)");
                        else
                            std::snprintf(ceil, sizeof ceil, "%.0f", c->pct);
                        if (doubtful && flags.find("noisy") == std::string::npos) flags += "noisy ";
                    }
                }
                char read[16] = "-";
                if (read_row(s, m)) {
                    const ReadShare r = read_share([ffn, x, y, m] { ffn->forward(x, y, m); },
                                                   weight_bytes(s, dtype), threads, kFreshWindows);
                    if (r.pct > 0 && r.doubtful)
                        std::snprintf(read, sizeof read, "(?)");
                    else if (r.pct > 0)
                        std::snprintf(read, sizeof read, "%.0f", r.pct);
                    if (r.doubtful && flags.find("noisy") == std::string::npos) flags += "noisy ";
                }
                std::printf(
                    "%-8s %-6s %5lld %3d %10.4g %5.0f %9.1f %8.1f %7.1f %7s %10s %5s %9s %6s %6s "
                    "%6s %s\n",
                    s.name, dn, (long long)m, threads, t_ffn * 1e3, 50 * pt.a.spread(),
                    s.flops(m) / t_ffn * 1e-9, weight_bytes(s, dtype) / t_ffn * 1e-9,
                    100.0 * roof / t_ffn, bf16pk, base_ms, speedup, base_pm, ceil, read,
                    fixed1(pt.others).c_str(), flags.c_str());
                std::fflush(stdout);
                char diff[96];
                std::snprintf(diff, sizeof diff, "%sM=%lld %.2e", diffs.empty() ? "" : ", ",
                              (long long)m, v.diff);
                diffs += diff;
                if (v.against != dtype)
                    diffs += std::string(" (vs the ") + v.against.name + " baseline)";
            }
            notes.push_back(std::string(s.name) + " " + dn + ": ffn matmul=" + impl.matmul +
                            " activation=" + impl.activation +
                            " threads=" + std::to_string(impl.threads) + "; baseline " + base_impl +
                            "; max rel diff vs baseline " + diffs);
        });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "swiglu_bench --profile: %s\n", e.what());
        return 1;
    }
    std::printf(
        "\nroof%% = 100 * max(FLOPs/peak(dtype), weight bytes(dtype)/read rate) / time, "
        "peak(dtype) = f32 FMA, bf16 vdpbf16ps or int8 dot-product rate (GGUF block formats: "
        "int8), "
        "read rate = of a buffer the weights' size (the cache level or DRAM that holds them; "
        "the DRAM probe's from 256 MiB)\nbf16pk%% = int8 and block-format GOP/s as %% "
        "of the bf16 peak; GB/s = weight bytes of the dtype as GGUF stores it (4, 2, 1, 34/32, "
        "18/32, 144/256, 176/256, 210/256 per weight; q4_k_m: gate, up q4_k, down q6_k) "
        "/ time;\nms/call, base_ms = medians of ffn and baseline samples (batches of calls, the "
        "two interleaved); speedup = median of the per-round ratios baseline / ffn; +-%% = half "
        "the p10..p90 range, %% of the median (of ffn's samples, of the ratios); others = CPUs' "
        "worth of time other processes used meanwhile; flags: noisy = the ratios' spread (ffn's "
        "without a baseline) stayed over 20 %%, busy = others over 0.25: either leaves the "
        "speedup out, (?): no figure to quote (run again on a quieter machine);\nceil%% = "
        "(M >= 128, f32, bf16, int8) GFLOP/s as %% of one plain oneDNN matmul (M x d) * (d x 2f) "
        "of the dtype, weights prepacked, same threads, the two interleaved right after the "
        "row (median of the rounds' ratios); read%% = (llama7b, M = 1) GB/s as %% of a plain "
        "read of the same bytes from DRAM by the same threads, the two interleaved (median of "
        "the rounds' ratios)\n");
    for (const auto& n : notes) std::printf("%s\n", n.c_str());
    // The host's bandwidth swings: the M=1 rows' roof% uses the probe made
    // before the profile; this one shows whether it held.
    std::printf("other processes' load: %s CPUs before the profile, %s after it\n",
                fixed1(load_before).c_str(), fixed1(others_load(0.5)).c_str());
    const std::map<int, double> after = probe_dram_again();
    for (const auto& [t, gbs] : after)
        std::printf("dram_read_gbs_%dt: %.1f before the profile, %.1f after it\n", t, probe.dram(t),
                    gbs);
    std::printf("profile: %.0f s\n", std::chrono::duration<double>(Clock::now() - t_start).count());
    return 0;
}

int run_ridge(bool quick, const std::vector<BenchDtype>& dtypes) {
    const MachineProbe& probe = machine();
    print_probe(probe);
    const double load_before = others_load(0.5);
    std::printf("\n%-8s %-6s %3s %3s %9s %5s %9s %8s %8s %9s %9s %8s %8s %9s %-13s %6s %6s %s\n",
                "shape", "dtype", "M", "T", "ms/call", "+-%", "GFLOP/s", "GB/s", "read", "bytes_ms",
                "flops_ms", "kern_GOP", "fixed_us", "limit_ms", "bound", "share", "others",
                "flags");
    std::fflush(stdout);
    BlockFixture& fx = fixture();
    const auto t_start = Clock::now();
    try {
        for_each_block(quick, dtypes, [&](const Shape& s, BenchDtype dtype, swiglu::Ffn* ffn) {
            const char* dn = dtype.name;
            const int threads = ffn->threads();
            for (std::int64_t m : kRidgeTokens) {
                const float* x = fx.x();
                float* y = fx.y();
                const PairTiming pt = time_interleaved([ffn, x, y, m] { ffn->forward(x, y, m); },
                                                       std::function<void()>());
                const double t = pt.a.median;
                const RidgeLimit lim = ridge_limit(s, m, threads, dtype);
                const std::string flags = row_flags(pt);
                std::printf(
                    "%-8s %-6s %3lld %3d %9.4g %5.0f %9.1f %8.1f %8.1f %9.4g %9.4g %8s %8.1f "
                    "%9.4g %-13s %5.0f%% %6s %s\n",
                    s.name, dn, (long long)m, threads, t * 1e3, 50 * pt.a.spread(),
                    s.flops(m) / t * 1e-9, weight_bytes(s, dtype) / t * 1e-9, lim.roof.read_gbs,
                    lim.roof.bytes_s * 1e3, lim.roof.flops_s * 1e3,
                    lim.kernel_gops > 0 ? fixed1(lim.kernel_gops).c_str() : "-",
                    (2 * lim.phase_s + lim.call_s) * 1e6, lim.seconds() * 1e3, lim.bound(),
                    100.0 * lim.seconds() / t, fixed1(pt.others).c_str(), flags.c_str());
                std::fflush(stdout);
            }
        });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "swiglu_bench --ridge: %s\n", e.what());
        return 1;
    }
    std::printf(
        "\nread = GB/s at which the weights can be read where they live (a buffer of their "
        "size read over and over: L2, L3 or DRAM; the DRAM probe's from 256 MiB); bytes_ms = "
        "weight bytes / read; flops_ms = FLOPs (int8: OPs) / peak(dtype), block formats: OPs / "
        "kern_GOP, the GOP/s of their own kernels on a cache-resident block (the faster of d 256, "
        "f 1024 and d 512, f 2048, same M and T, its fixed cost taken off); fixed_us (glass, "
        "cyber) = 2 empty pool "
        "phases on T threads + the call of a d = f = 1 block at M tokens on one thread; "
        "limit = the larger of bytes and flops, + fixed (bound: which); share = limit / "
        "ms/call; ms/call = median of batches of calls, +-%% = half their p10..p90 range; "
        "others, flags: as in --profile\n");
    std::printf("other processes' load: %s CPUs before, %s after\n", fixed1(load_before).c_str(),
                fixed1(others_load(0.5)).c_str());
    std::printf("ridge: %.0f s\n", std::chrono::duration<double>(Clock::now() - t_start).count());
    return 0;
}

}  // namespace swiglu_bench
