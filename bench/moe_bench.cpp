// moe/<shape>/<dtype>/M:<tokens>/T:<threads>: swiglu::Experts on the MoE
// shapes (moe_shapes.hpp), routing drawn at random with a fixed seed and
// changed from call to call.
//
// Why the routing changes: successive tokens and layers choose other
// experts, and a benchmark that calls with one routing would read the same
// few experts every time: one qwen3moe call's 8 chosen q4_0 experts are 21 MB
// and would sit in a 32 MB L3, flattering every row. kMoeDraws routings
// are cycled through, so the experts a call reads were last read kMoeDraws - 1
// calls earlier (about all 128 of qwen3moe's, 340 MB in q4_0, in between).
//
// What the rows report: the bytes of the distinct experts each call reads
// (the file's bytes per weight, bench_dtypes.hpp; SetBytesProcessed, so
// Google Benchmark's bytes_per_second is that rate), that rate against the
// DRAM probe of the same run (dram_pct), and GFLOP/s (6 M k d f per call)
// against the dtype's compute peak (pct_of_peak). One-token rows also
// report read_pct: that rate against a plain read of a call's mean bytes,
// the two timed interleaved (read_beside.hpp).
#include "moe_bench.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/moe.hpp>
#include "ffn_bench.hpp"
#include "machine_probe.hpp"
#include "moe_shapes.hpp"
#include "read_beside.hpp"
#include "weights.hpp"

namespace swiglu_bench {
namespace {

// One Experts alive at a time, rebuilt when the shape, dtype or thread
// count changes (the rows are registered in that nesting, so each is built
// once). Every expert is packed from the same f32 weights: each still lies
// in its own memory, which is what the rows measure, and the source stays
// one expert's size (Mixtral's: 704 MB in f32) instead of E of them.
class MoeFixture {
public:
    const swiglu::Experts& experts(const MoeShape& s, const BenchDtype& dtype, int threads) {
        if (experts_ && shape_ == &s && dtype_ == dtype && threads_ == threads) return *experts_;
        experts_.reset();
        if (!source_ || source_->shape.d != s.d || source_->shape.f != s.f)
            source_ = make_weights(Shape{s.name, s.d, s.f});
        const swiglu::ExpertWeights one{swiglu::WeightView::out_in(source_->gate.get(), s.f, s.d),
                                        swiglu::WeightView::out_in(source_->up.get(), s.f, s.d),
                                        swiglu::WeightView::out_in(source_->down.get(), s.d, s.f)};
        const std::vector<swiglu::ExpertWeights> all(static_cast<std::size_t>(s.experts), one);
        const swiglu::Options options = bench_options(threads, dtype);
        experts_ = std::make_unique<swiglu::Experts>(all, options);
        // Every expert is the same block and each token's weights sum to 1,
        // so y must be that block's output: a check that the rows time a
        // working layer (not a test: the experts suite has those).
        check(s, swiglu::Ffn(one.gate, one.up, one.down, options));
        shape_ = &s;
        dtype_ = dtype;
        threads_ = threads;
        return *experts_;
    }

private:
    void check(const MoeShape& s, const swiglu::Ffn& block) const {
        const std::int64_t tokens = 3;
        const std::vector<float> x = make_input(tokens, s.d, 7);
        std::vector<float> y(x.size()), y_ref(x.size());
        const std::vector<MoeDraw> draws = make_moe_draws(s, tokens, 0);
        experts_->forward(x.data(), y.data(), tokens, draws[0].ids.data(), draws[0].weights.data(),
                          s.top_k);
        block.forward(x.data(), y_ref.data(), tokens);
        double diff = 0, scale = 0;
        for (std::size_t i = 0; i < y.size(); ++i) {
            diff = std::max(diff, double(std::fabs(y[i] - y_ref[i])));
            scale = std::max(scale, double(std::fabs(y_ref[i])));
        }
        // k weighted copies of one row summed in f32 (about k ulps), and the
        // block run at another row count (bf16's kernels may then differ by
        // their accumulation order): far under 1e-3 of max|y|.
        if (!(diff <= 1e-3 * scale)) {
            std::fprintf(
                stderr,
                "\nFATAL: moe/%s: Experts' y differs from its one block's by %.3g (max|y| %.3g)\n",
                s.name, diff, scale);
            std::abort();
        }
    }

    const MoeShape* shape_ = nullptr;
    BenchDtype dtype_ = BenchDtype::of(swiglu::Dtype::f32);
    int threads_ = 0;
    std::unique_ptr<ShapeWeights> source_;
    std::unique_ptr<swiglu::Experts> experts_;
};

MoeFixture& fixture() {
    static MoeFixture fx;
    return fx;
}

void bm_moe(benchmark::State& st, const MoeShape* s, const BenchDtype& dtype, std::int64_t tokens,
            int threads) {
    const double expert_bytes = weight_bytes(Shape{s->name, s->d, s->f}, dtype);
    const swiglu::Experts* experts = nullptr;
    try {
        experts = &fixture().experts(*s, dtype, threads);
    } catch (const std::exception& e) {
        st.SkipWithError(e.what());
        return;
    }
    const std::vector<MoeDraw> draws = make_moe_draws(*s, tokens, expert_bytes);
    const std::vector<float> x = make_input(tokens, s->d, 1);
    std::vector<float> y(x.size());
    // One call per draw first: the calls timed below find their scratch made.
    for (const MoeDraw& d : draws)
        experts->forward(x.data(), y.data(), tokens, d.ids.data(), d.weights.data(), s->top_k);
    std::size_t next = 0;
    double bytes = 0;
    const auto begin = std::chrono::steady_clock::now();
    for (auto _ : st) {
        const MoeDraw& d = draws[next];
        next = (next + 1) % draws.size();
        experts->forward(x.data(), y.data(), tokens, d.ids.data(), d.weights.data(), s->top_k);
        bytes += d.bytes;
        benchmark::DoNotOptimize(y.data());
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    const double calls = double(st.iterations());
    if (calls == 0) return;
    st.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    const double ns = seconds * 1e9 / calls;
    const double gbs = bytes / calls / ns;  // bytes per ns = GB/s
    const double gflops =
        6.0 * double(tokens) * double(s->top_k) * double(s->d) * double(s->f) / ns;
    st.counters["ns_per_call"] = ns;
    st.counters["GBs"] = gbs;
    st.counters["GFLOPs"] = gflops;
    const double dram = machine().dram(threads);
    if (dram > 0) st.counters["dram_pct"] = 100.0 * gbs / dram;
    const double peak =
        machine().peak(threads, dtype.grouped() ? swiglu::Dtype::int8 : dtype.dtype);
    if (peak > 0) st.counters["pct_of_peak"] = 100.0 * gflops / peak;
    if (tokens != 1) return;
    // Decode against a plain read of a call's mean bytes, interleaved
    // (read_beside.hpp); the calls go on cycling through the draws.
    double draw_bytes = 0;
    for (const MoeDraw& d : draws) draw_bytes += d.bytes;
    const std::string key = std::string(s->name) + "/" + dtype.name + "/" + std::to_string(threads);
    add_read_counters(
        st, key,
        [&] {
            const MoeDraw& d = draws[next];
            next = (next + 1) % draws.size();
            experts->forward(x.data(), y.data(), tokens, d.ids.data(), d.weights.data(), s->top_k);
        },
        draw_bytes / double(draws.size()), experts->threads(), int(draws.size()));
}

// The dtypes the rows run: f32 (2.4-5.6 GB of experts per shape) and int8
// (no MoE file holds it) are left out.
bool moe_dtype(const BenchDtype& dtype) {
    return dtype.dtype != swiglu::Dtype::f32 && dtype.dtype != swiglu::Dtype::int8;
}

}  // namespace

void register_moe_benchmarks(bool quick, const std::vector<int>& threads,
                             const std::vector<BenchDtype>& dtypes) {
    if (quick) return;
    for (const MoeShape& s : moe_shapes())
        for (const BenchDtype& dtype : dtypes) {
            if (!moe_dtype(dtype)) continue;
            for (int t : threads)
                for (std::int64_t m : moe_tokens()) {
                    const std::string name = "moe/" + std::string(s.name) + "/" + dtype.name +
                                             "/M:" + std::to_string(m) + "/T:" + std::to_string(t);
                    const MoeShape* sp = &s;
                    benchmark::RegisterBenchmark(
                        name.c_str(),
                        [sp, dtype, m, t](benchmark::State& st) { bm_moe(st, sp, dtype, m, t); })
                        ->UseRealTime()
                        ->Unit(benchmark::kMillisecond)
                        ->MinTime(0.5);
                }
        }
}

}  // namespace swiglu_bench
