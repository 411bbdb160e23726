// ffn/<shape>/f32/M:<tokens>/T:<threads> and baseline/<shape>/f32/M:<tokens>/T:<threads>,
// and the --profile table.
//
// Counters (per call, from this file's own clock around the timed loop):
//   ns_per_call   wall time of one forward()
//   GFLOPs        6 M d f / time, GFLOP/s
//   GBs           3 d f * 4 weight bytes / time, GB/s
//   roofline_pct  100 * t_roofline / time, with t_roofline =
//                 max(FLOPs / peak_fp32(T), weight bytes / dram_read(T)) from
//                 the machine probe. Over 100 means the weights came from
//                 cache, not DRAM (glass and cyber fit in L2/L3).
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
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "baseline.hpp"
#include "machine_probe.hpp"
#include "shapes.hpp"
#include "swiglu/swiglu.hpp"

namespace swiglu_bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kTolerance = 1e-4;  // max |y_ffn - y_base| / max |y_base|

// Holds the weights of one shape, at most one Ffn and at most one Baseline,
// so llama7b (541 MB per f32 copy) keeps at most three copies alive: the
// source weights, the Ffn's packed copy and the baseline's packed copy.
// Benchmarks are registered shape by shape and, within a shape, threads by
// threads, so each object is built once and reused across token counts.
class Workspace {
public:
    void use_shape(const Shape& s) {
        if (w_ && std::strcmp(w_->shape.name, s.name) == 0) return;
        base_.reset();
        ffn_.reset();
        w_.reset();
        verified_.clear();
        w_ = make_weights(s);
        x_ = make_input(kMaxTokens, s.d, 42);
        y_.assign(x_.size(), 0.0f);
        y_ref_.assign(x_.size(), 0.0f);
    }

    const Shape& shape() const { return w_->shape; }
    const float* x() const { return x_.data(); }
    float* y() { return y_.data(); }

    // `threads` as passed to swiglu::Options (0 = library default).
    swiglu::Ffn& ffn(int threads) {
        if (!ffn_ || ffn_option_ != threads) {
            ffn_.reset();
            const std::int64_t d = w_->shape.d, f = w_->shape.f;
            swiglu::Options options;
            options.threads = threads;
            ffn_ = std::make_unique<swiglu::Ffn>(swiglu::WeightView::out_in(w_->gate.get(), f, d),
                                                 swiglu::WeightView::out_in(w_->up.get(), f, d),
                                                 swiglu::WeightView::out_in(w_->down.get(), d, f),
                                                 options);
            ffn_option_ = threads;
        }
        return *ffn_;
    }

    // Also sets OpenMP's thread count for the calls that follow.
    Baseline& baseline(std::int64_t tokens, int threads) {
        if (!base_ || base_->tokens() != tokens || base_->threads() != threads) {
            PackedWeights reuse = base_ ? base_->take_packed() : PackedWeights{};
            base_.reset();
            base_ = std::make_unique<Baseline>(*w_, tokens, threads, std::move(reuse));
        }
        omp_set_num_threads(threads);
        return *base_;
    }

    // Once per (tokens, ffn option): runs both on the same input and aborts
    // if they disagree. Returns the relative difference.
    double verify(std::int64_t tokens, int ffn_threads, int base_threads) {
        const auto key = std::make_pair(tokens, ffn_threads);
        if (auto it = verified_.find(key); it != verified_.end()) return it->second;
        const std::size_t n = std::size_t(tokens) * std::size_t(w_->shape.d);
        std::fill(y_.begin(), y_.begin() + std::ptrdiff_t(n), NAN);
        ffn(ffn_threads).forward(x_.data(), y_.data(), tokens);
        baseline(tokens, base_threads).forward(x_.data(), y_ref_.data());
        const double diff = relative_max_diff(y_.data(), y_ref_.data(), n);
        if (!(diff < kTolerance)) {
            std::size_t worst = 0;
            for (std::size_t i = 0; i < n; ++i)
                if (!(std::fabs(y_[i] - y_ref_[i]) <= std::fabs(y_[worst] - y_ref_[worst])))
                    worst = i;
            std::fprintf(stderr,
                         "\nFATAL: swiglu::Ffn output disagrees with the oneDNN baseline\n"
                         "  shape %s (d=%lld, f=%lld), tokens %lld, Ffn threads option %d\n"
                         "  max|y_ffn - y_base| / max|y_base| = %.3g (tolerance %.0e)\n"
                         "  worst element %zu (row %zu, col %zu): ffn %.8g, baseline %.8g\n",
                         w_->shape.name, (long long)w_->shape.d, (long long)w_->shape.f,
                         (long long)tokens, ffn_threads, diff, kTolerance, worst,
                         worst / std::size_t(w_->shape.d), worst % std::size_t(w_->shape.d),
                         double(y_[worst]), double(y_ref_[worst]));
            std::fflush(stderr);
            std::abort();
        }
        verified_.emplace(key, diff);
        return diff;
    }

private:
    std::unique_ptr<ShapeWeights> w_;
    std::unique_ptr<swiglu::Ffn> ffn_;
    int ffn_option_ = -1;
    std::unique_ptr<Baseline> base_;
    std::vector<float> x_, y_, y_ref_;
    std::map<std::pair<std::int64_t, int>, double> verified_;
};

Workspace& workspace() {
    static Workspace ws;
    return ws;
}

double roofline_seconds(const Shape& s, std::int64_t tokens, int threads) {
    const MachineProbe& p = machine();
    const double peak = p.peak(threads), bw = p.dram(threads);
    const double t_flops = peak > 0 ? s.flops(tokens) / (peak * 1e9) : 0;
    const double t_bytes = bw > 0 ? s.weight_bytes() / (bw * 1e9) : 0;
    return std::max(t_flops, t_bytes);
}

void set_counters(benchmark::State& st, const Shape& s, std::int64_t tokens, int threads, double ns) {
    st.counters["ns_per_call"] = ns;
    st.counters["GFLOPs"] = s.flops(tokens) / ns;
    st.counters["GBs"] = s.weight_bytes() / ns;
    st.counters["roofline_pct"] = 100.0 * roofline_seconds(s, tokens, threads) * 1e9 / ns;
}

bool is_big(const Shape& s) { return s.d * s.f >= (std::int64_t(1) << 24); }

// Fixed iteration counts for llama7b (one call: ~20 ms at M=1 up to ~1.5 s at
// M=512 on one core).
benchmark::IterationCount big_iterations(std::int64_t tokens) {
    if (tokens <= 1) return 10;
    if (tokens <= 16) return 8;
    if (tokens <= 64) return 4;
    if (tokens <= 128) return 3;
    return 2;
}

template <class Body>
void guarded(benchmark::State& st, Body&& body) {
    try {
        body();
    } catch (const std::exception& e) {
        st.SkipWithError(e.what());
    }
}

void bm_baseline(benchmark::State& st, const Shape* s, std::int64_t tokens, int threads) {
    guarded(st, [&] {
        Workspace& ws = workspace();
        ws.use_shape(*s);
        ws.verify(tokens, threads, threads);
        Baseline& base = ws.baseline(tokens, threads);  // sets omp_set_num_threads
        const float* x = ws.x();
        float* y = ws.y();
        base.forward(x, y);  // warm
        const auto t0 = Clock::now();
        for (auto _ : st) base.forward(x, y);
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        benchmark::DoNotOptimize(y[0]);
        set_counters(st, *s, tokens, threads, ns / double(st.iterations()));
    });
}

void bm_ffn(benchmark::State& st, const Shape* s, std::int64_t tokens, int threads) {
    guarded(st, [&] {
        Workspace& ws = workspace();
        ws.use_shape(*s);
        ws.verify(tokens, threads, threads);
        const swiglu::Ffn& ffn = ws.ffn(threads);
        const float* x = ws.x();
        float* y = ws.y();
        ffn.forward(x, y, tokens);  // warm
        const auto t0 = Clock::now();
        for (auto _ : st) ffn.forward(x, y, tokens);
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        benchmark::DoNotOptimize(y[0]);
        set_counters(st, *s, tokens, threads, ns / double(st.iterations()));
    });
}

int affinity_count() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return std::max(1, CPU_COUNT(&set));
}

// ---------------------------------------------------------------- --profile

// Median wall time of one call, seconds: one warm-up call, then calls until
// at least 3 calls and 0.3 s.
template <class Call>
double time_call(Call&& call) {
    call();
    std::vector<double> t;
    double total = 0;
    while (t.size() < 3 || total < 0.3) {
        const auto t0 = Clock::now();
        call();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        t.push_back(s);
        total += s;
    }
    std::nth_element(t.begin(), t.begin() + std::ptrdiff_t(t.size() / 2), t.end());
    return t[t.size() / 2];
}

}  // namespace

LibraryInfo library_info() {
    LibraryInfo info;
    info.threads_default = affinity_count();
    try {
        const Shape s = all_shapes().front();
        auto w = make_weights(s);
        swiglu::Ffn ffn(swiglu::WeightView::out_in(w->gate.get(), s.f, s.d),
                        swiglu::WeightView::out_in(w->up.get(), s.f, s.d),
                        swiglu::WeightView::out_in(w->down.get(), s.d, s.f), swiglu::Options{});
        info.threads_default = ffn.threads();
        const swiglu::Implementation impl = ffn.implementation();
        info.matmul = impl.matmul;
        info.activation = impl.activation;
    } catch (const std::exception& e) {
        info.error = e.what();
    }
    return info;
}

std::vector<int> bench_thread_counts(int threads_default) {
    std::vector<int> t = {1, 2};
    if (threads_default > 2) t.push_back(threads_default);
    return t;
}

void register_ffn_benchmarks(bool quick, const std::vector<int>& threads) {
    for (const Shape& s : all_shapes()) {
        if (quick && is_big(s)) continue;
        for (int t : threads) {
            for (std::int64_t m : all_tokens()) {
                const std::string suffix = std::string(s.name) + "/f32/M:" + std::to_string(m) +
                                           "/T:" + std::to_string(t);
                const Shape* sp = &s;
                benchmark::internal::Benchmark* b[2] = {
                    benchmark::RegisterBenchmark(
                        ("baseline/" + suffix).c_str(),
                        [sp, m, t](benchmark::State& st) { bm_baseline(st, sp, m, t); }),
                    benchmark::RegisterBenchmark(
                        ("ffn/" + suffix).c_str(),
                        [sp, m, t](benchmark::State& st) { bm_ffn(st, sp, m, t); }),
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

int run_profile(bool quick) {
    const MachineProbe& probe = machine();
    print_probe(probe);
    std::printf("\n%-8s %5s %3s %10s %9s %8s %7s %10s %8s\n", "shape", "M", "T", "ms/call",
                "GFLOP/s", "GB/s", "roof%", "base_ms", "speedup");
    std::fflush(stdout);
    std::vector<std::string> notes;
    Workspace& ws = workspace();
    try {
        for (const Shape& s : all_shapes()) {
            if (quick && is_big(s)) continue;
            ws.use_shape(s);
            swiglu::Ffn& ffn = ws.ffn(0);
            const int threads = ffn.threads();
            const swiglu::Implementation impl = ffn.implementation();
            std::string base_impl;
            for (std::int64_t m : {std::int64_t(1), std::int64_t(16), std::int64_t(512)}) {
                const double diff = ws.verify(m, 0, threads);
                Baseline& base = ws.baseline(m, threads);
                base_impl = base.implementation();
                const float* x = ws.x();
                float* y = ws.y();
                const double t_base = time_call([&] { base.forward(x, y); });
                const double t_ffn = time_call([&] { ffn.forward(x, y, m); });
                const double roof = roofline_seconds(s, m, threads);
                std::printf("%-8s %5lld %3d %10.4g %9.1f %8.1f %7.1f %10.4g %7.2fx\n", s.name,
                            (long long)m, threads, t_ffn * 1e3, s.flops(m) / t_ffn * 1e-9,
                            s.weight_bytes() / t_ffn * 1e-9, 100.0 * roof / t_ffn, t_base * 1e3,
                            t_base / t_ffn);
                std::fflush(stdout);
                char note[256];
                std::snprintf(note, sizeof note, "%s M=%lld: max rel diff vs baseline %.2e", s.name,
                              (long long)m, diff);
                notes.emplace_back(note);
            }
            notes.push_back(std::string(s.name) + ": ffn matmul=" + impl.matmul +
                            " activation=" + impl.activation + " threads=" +
                            std::to_string(impl.threads) + "; baseline " + base_impl);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "swiglu_bench --profile: %s\n", e.what());
        return 1;
    }
    std::printf("\nroof%% = 100 * max(FLOPs/peak_fp32, weight bytes/dram_read) / time "
                "(>100: weights served from cache); speedup = baseline time / ffn time\n");
    for (const auto& n : notes) std::printf("%s\n", n.c_str());
    return 0;
}

}  // namespace swiglu_bench
