// bwd/, bwd_recompute/ and bwd_baseline/<shape>/f32/M:<m>/T:<t>.
//
// Counters (per call):
//   ns_per_call   wall time of one backward
//   GFLOPs        12 M d f / time: dact, dx (twice the work) and the three
//                 weight gradients; a recomputing row does 4 M d f more (the
//                 gate and up matmuls) and a forward's down matmul (2 M d f)
//                 it drops, not counted
//   pct_of_peak   100 * GFLOPs / the f32 FMA peak of T threads, probed in
//                 the same run (machine_probe.hpp)
// and on bwd/ rows, the ratio to the baseline measured so that the shared
// machine cannot make it up (interleaved_timing.hpp: batches of our calls
// and the baseline's alternate, the ratio is the median of the rounds'):
//   x_baseline    the baseline's time per call over ours (> 1: ours faster)
//   x_baseline_p10, x_baseline_p90   the rounds' spread
//   noisy         1 when that spread stayed over 20 %: not a figure to quote
//   pct_of_peak_median, _p10, _p90   pct_of_peak from those rounds' own
//                 batches of our calls (their median and spread). One call
//                 the host preempts moves pct_of_peak, the mean of the 2-3
//                 calls the big rows take; not this median. Each batch
//                 follows one of the baseline's, with its data in the
//                 caches, so it can read lower than back-to-back calls
//                 (llama7b 512 tokens: 73 % against 79 % in one run)
// and on bwd/ rows of M >= 128, the share of the GEMM ceiling
// (gemm_ceiling.hpp: one plain f32 matmul (M x d) * (d x 2f), same threads),
// timed interleaved with our calls after the baseline's rounds:
//   ceil_pct      100 * GFLOPs / the ceiling's GFLOP/s (ceil_pct_p10, _p90:
//                 the rounds' spread; ceil_noisy = 1 when it stayed over 20 %)
//   ceil_GFLOPs   the ceiling's own rate
// The rows' own times are Google Benchmark's, one row after another, so
// their quotient can differ from x_baseline by the host's drift (±10 %
// here between rows).
// Each (shape, M, T) is checked once against the baseline: dx and every
// weight gradient within 1e-4 of the baseline's max |value|, or the run
// aborts.
#include "backward_bench.hpp"

#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backward_baseline.hpp"
#include "baseline.hpp"
#include "ffn_bench.hpp"
#include "gemm_ceiling.hpp"
#include "interleaved_timing.hpp"
#include "machine_probe.hpp"
#include "shapes.hpp"
#include "swiglu/swiglu.hpp"
#include "weights.hpp"

namespace swiglu_bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kBackwardTokens[] = {16, 128, 512};

// One shape's weights, its Ffn (per thread count), its baseline (per tokens
// and threads), the inputs and both sides' outputs.
class BackwardFixture {
public:
    void use(const Shape& s, int threads, std::int64_t tokens) {
        if (!w_ || std::strcmp(w_->shape.name, s.name) != 0) {
            base_.reset();
            ffn_.reset();
            w_ = make_weights(s);
            x_ = make_input(kMaxTokens, s.d, 42);
            dy_ = make_input(kMaxTokens, s.d, 43);
            const auto df = static_cast<std::size_t>(s.d * s.f);
            for (auto* g : {&ours_, &theirs_}) {
                g->dx.assign(x_.size(), 0.0f);
                g->gate.assign(df, 0.0f);
                g->up.assign(df, 0.0f);
                g->down.assign(df, 0.0f);
            }
            y_.assign(x_.size(), 0.0f);
        }
        const std::int64_t d = s.d, f = s.f;
        if (!ffn_ || ffn_->threads() != threads) {
            ffn_.reset();
            ffn_ = std::make_unique<swiglu::Ffn>(swiglu::WeightView::out_in(w_->gate.get(), f, d),
                                                 swiglu::WeightView::out_in(w_->up.get(), f, d),
                                                 swiglu::WeightView::out_in(w_->down.get(), d, f),
                                                 bench_options(threads));
            ffn_->enable_backward();
            saved_tokens_ = 0;
        }
        if (saved_tokens_ != tokens) {
            saved_.assign(static_cast<std::size_t>(ffn_->saved_floats(tokens)), 0.0f);
            ffn_->forward_for_backward(x_.data(), y_.data(), saved_.data(), tokens);
            saved_tokens_ = tokens;
        }
        if (!base_ || base_->tokens() != tokens || base_->threads() != threads) {
            base_.reset();
            base_ = std::make_unique<BackwardBaseline>(*w_, tokens, threads);
            check(s, tokens);
        }
        omp_set_num_threads(threads);
    }

    void ours(std::int64_t tokens, bool recompute) {
        ffn_->backward(x_.data(), dy_.data(), ours_.dx.data(), tokens,
                       swiglu::Gradients{ours_.gate.data(), ours_.up.data(), ours_.down.data()},
                       recompute ? nullptr : saved_.data());
    }
    void theirs() {
        base_->backward(x_.data(), dy_.data(), saved_.data(), theirs_.dx.data(),
                        theirs_.gate.data(), theirs_.up.data(), theirs_.down.data());
    }

private:
    struct Outputs {
        std::vector<float> dx, gate, up, down;
    };

    void check(const Shape& s, std::int64_t tokens) {
        omp_set_num_threads(base_->threads());
        theirs();
        ours(tokens, false);
        const auto n = static_cast<std::size_t>(tokens * s.d);
        const std::pair<const char*,
                        std::pair<const std::vector<float>*, const std::vector<float>*>>
            pairs[] = {{"dx", {&ours_.dx, &theirs_.dx}},
                       {"dW_gate", {&ours_.gate, &theirs_.gate}},
                       {"dW_up", {&ours_.up, &theirs_.up}},
                       {"dW_down", {&ours_.down, &theirs_.down}}};
        for (const auto& [name, p] : pairs) {
            const std::size_t count = p.first == &ours_.dx ? n : p.first->size();
            const double diff = relative_max_diff(p.first->data(), p.second->data(), count);
            if (!(diff < 1e-4)) {
                std::fprintf(stderr,
                             "\nFATAL: Ffn::backward's %s disagrees with the oneDNN baseline: "
                             "shape %s, tokens %lld: max diff / max |baseline| = %.3g\n",
                             name, s.name, static_cast<long long>(tokens), diff);
                std::abort();
            }
        }
    }

    std::unique_ptr<ShapeWeights> w_;
    std::unique_ptr<swiglu::Ffn> ffn_;
    std::unique_ptr<BackwardBaseline> base_;
    std::vector<float> x_, dy_, y_, saved_;
    std::int64_t saved_tokens_ = 0;
    Outputs ours_, theirs_;
};

BackwardFixture& fixture() {
    static BackwardFixture fx;
    return fx;
}

double gflops(const Shape& s, std::int64_t tokens, double ns) {
    return 2.0 * s.flops(tokens) / ns;  // 12 M d f
}

double pct_of_peak(const Shape& s, std::int64_t tokens, int threads, double ns) {
    const double peak = machine().peak(threads);
    return peak > 0 && ns > 0 ? 100.0 * gflops(s, tokens, ns) / peak : 0;
}

void set_counters(benchmark::State& st, const Shape& s, std::int64_t tokens, int threads,
                  double ns) {
    st.counters["ns_per_call"] = ns;
    st.counters["GFLOPs"] = gflops(s, tokens, ns);
    st.counters["pct_of_peak"] = pct_of_peak(s, tokens, threads, ns);
}

enum class Side { ours, recompute, baseline };

void bm_backward(benchmark::State& st, const Shape* s, std::int64_t tokens, int threads,
                 Side side) {
    try {
        BackwardFixture& fx = fixture();
        fx.use(*s, threads, tokens);
        auto call = [&] {
            if (side == Side::baseline)
                fx.theirs();
            else
                fx.ours(tokens, side == Side::recompute);
        };
        call();  // warm
        const auto t0 = Clock::now();
        for (auto _ : st) call();
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        set_counters(st, *s, tokens, threads, ns / double(st.iterations()));
        if (side == Side::ours) {
            const PairTiming pt = time_interleaved(call, [&] { fx.theirs(); });
            st.counters["x_baseline"] = pt.ratio.median;
            st.counters["x_baseline_p10"] = pt.ratio.p10;
            st.counters["x_baseline_p90"] = pt.ratio.p90;
            st.counters["noisy"] = pt.noisy ? 1 : 0;
            auto pct = [&](double seconds) {
                return pct_of_peak(*s, tokens, threads, seconds * 1e9);
            };
            st.counters["pct_of_peak_median"] = pct(pt.a.median);
            st.counters["pct_of_peak_p10"] = pct(pt.a.p90);  // the slower calls
            st.counters["pct_of_peak_p90"] = pct(pt.a.p10);
            if (tokens >= kCeilingMinTokens) {
                // Built per row and dropped after it: a packed (d, 2f) f32
                // weight is 361 MB at llama7b.
                GemmCeiling ceiling(tokens, s->d, s->f, swiglu::Dtype::f32, threads);
                const CeilingShare c = ceiling_share(call, 2.0 * s->flops(tokens), ceiling);
                st.counters["ceil_pct"] = c.pct;
                st.counters["ceil_pct_p10"] = c.pct_p10;
                st.counters["ceil_pct_p90"] = c.pct_p90;
                st.counters["ceil_GFLOPs"] = c.gflops;
                st.counters["ceil_noisy"] = c.noisy ? 1 : 0;
            }
        }
    } catch (const std::exception& e) {
        st.SkipWithError(e.what());
    }
}

}  // namespace

void register_backward_benchmarks(bool quick, const std::vector<int>& threads) {
    for (const Shape& s : all_shapes()) {
        const bool big = s.d * s.f >= (std::int64_t(1) << 24);
        if (quick && big) continue;
        for (int t : threads)
            for (std::int64_t m : kBackwardTokens) {
                const std::string suffix =
                    std::string(s.name) + "/f32/M:" + std::to_string(m) + "/T:" + std::to_string(t);
                const Shape* sp = &s;
                for (const auto& [prefix, side] :
                     {std::pair{"bwd_baseline/", Side::baseline}, std::pair{"bwd/", Side::ours},
                      std::pair{"bwd_recompute/", Side::recompute}}) {
                    const Side which = side;
                    auto* b = benchmark::RegisterBenchmark((prefix + suffix).c_str(),
                                                           [sp, m, t, which](benchmark::State& st) {
                                                               bm_backward(st, sp, m, t, which);
                                                           });
                    b->UseRealTime();
                    if (big)
                        b->Unit(benchmark::kMillisecond)->Iterations(m >= 512 ? 2 : 3);
                    else
                        b->Unit(benchmark::kMicrosecond)->MinTime(0.2);
                }
            }
    }
}

}  // namespace swiglu_bench
