#include "ridge_limits.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "core/shared_pool.hpp"
#include "ffn_bench.hpp"
#include "interleaved_timing.hpp"
#include "weights.hpp"

namespace swiglu_bench {
namespace {

using Key = std::tuple<BenchDtype, std::int64_t, int>;

bool is_big(const Shape& s) { return s.d * s.f >= (std::int64_t(1) << 24); }

// The median time of one forward of a (d, f) block of `dtype` at `tokens`.
double forward_seconds(std::int64_t d, std::int64_t f, const BenchDtype& dtype, std::int64_t tokens,
                       int threads) {
    const Shape s{"probe", d, f};
    const std::unique_ptr<ShapeWeights> w = make_weights(s);
    const swiglu::Ffn ffn(swiglu::WeightView::out_in(w->gate.get(), f, d),
                          swiglu::WeightView::out_in(w->up.get(), f, d),
                          swiglu::WeightView::out_in(w->down.get(), d, f),
                          bench_options(threads, dtype));
    const std::vector<float> x = make_input(tokens, d, 7);
    std::vector<float> y(x.size());
    ffn.forward(x.data(), y.data(), tokens);  // warm: first call's workspace
    return time_interleaved([&] { ffn.forward(x.data(), y.data(), tokens); }, {}).a.median;
}

// One empty phase of the shared pool of `threads`: what the forward pays per
// phase on top of its tasks (waking or reaching the spinning workers, the
// join).
double phase_seconds(int threads) {
    if (threads < 2) return 0;
    static std::map<int, double> cache;
    if (auto it = cache.find(threads); it != cache.end()) return it->second;
    // The block alive for the row holds this pool, so this is its pool. Claimed
    // as a forward claims it: nothing else may drive it while the phases run.
    const auto shared = swiglu::detail::shared_pool(threads, nullptr);
    const swiglu::detail::PoolClaim claim(shared.get());
    if (!claim.held())
        throw std::logic_error("ridge limits: the shared pool is driven by another caller");
    swiglu::detail::ThreadPool& pool = shared->pool();
    auto noop = [](std::int64_t, int) {};
    constexpr int kRuns = 1000;  // one sample: a batch of runs, ~1-10 us each
    const double s = time_interleaved(
                         [&] {
                             for (int i = 0; i < kRuns; ++i) pool.run(threads, noop);
                         },
                         {})
                         .a.median /
                     kRuns;
    cache[threads] = s;
    return s;
}

double call_seconds(const BenchDtype& dtype, std::int64_t tokens) {
    static std::map<Key, double> cache;
    const Key key{dtype, tokens, 1};
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    return cache[key] = forward_seconds(1, 1, dtype, tokens, 1);
}

// GOP/s of the block format's kernels on cache-resident weights, the fixed
// cost of the probe's own call taken off.
double kernel_gops(const BenchDtype& dtype, std::int64_t tokens, int threads) {
    static std::map<Key, double> cache;
    const Key key{dtype, tokens, threads};
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    // Two sizes, the faster kept: the small one's weights fit one core's L2
    // on every host here, the larger one's amortise the call better.
    constexpr std::int64_t probes[][2] = {{256, 1024}, {512, 2048}};
    const double fixed = 2 * phase_seconds(threads) + call_seconds(dtype, tokens);
    double best = 0;
    for (const auto& [d, f] : probes) {
        const double t = forward_seconds(d, f, dtype, tokens, threads);
        const double busy = t > fixed ? t - fixed : t;
        best = std::max(best, Shape{"probe", d, f}.flops(tokens) / busy * 1e-9);
    }
    return cache[key] = best;
}

}  // namespace

const char* RidgeLimit::bound() const {
    const bool fixed = phase_s > 0 || call_s > 0;
    if (roof.bytes_s > roof.flops_s) return fixed ? "bytes+fixed" : "bytes";
    if (kernel_gops > 0) return fixed ? "kernel+fixed" : "kernel";
    return fixed ? "compute+fixed" : "compute";
}

RidgeLimit ridge_limit(const Shape& s, std::int64_t tokens, int threads, const BenchDtype& dtype) {
    RidgeLimit l;
    l.roof = roofline(s, tokens, threads, dtype);
    if (dtype.grouped()) {
        // A mix runs gate and up (2/3 of the FLOPs) on one format's kernels
        // and down (1/3) on the other's: each part at its kernel's rate.
        const double gate_up = kernel_gops(BenchDtype::of(dtype.dtype), tokens, threads);
        const double down =
            dtype.mixed() ? kernel_gops(BenchDtype::of(dtype.down), tokens, threads) : gate_up;
        const double flops = s.flops(tokens);
        l.roof.flops_s = (flops * 2 / 3 / gate_up + flops / 3 / down) * 1e-9;
        l.kernel_gops = flops / l.roof.flops_s * 1e-9;
    }
    if (!is_big(s)) {
        l.phase_s = phase_seconds(threads);
        l.call_s = call_seconds(dtype, tokens);
    }
    return l;
}

}  // namespace swiglu_bench
