// swiglu_ggml_peer's MoE rows: the routed experts of an MoE layer in
// swiglu::Experts and in ggml as llama.cpp's build_moe_ffn runs them, on the
// same weights, the same x and the same routings, timed in alternating
// batches. bench/peers/README.md ("MoE rows").
//
// ggml's side (llama.cpp's src/llama-graph.cpp, build_moe_ffn, for the
// routed experts of a SwiGLU MoE: gate_exps and up_exps apart, no biases,
// weights applied after the FFN): x (d, M) viewed as (d, 1, M);
// up = ggml_mul_mat_id(up_exps, x, ids), gate = ggml_mul_mat_id(gate_exps,
// x, ids) (f, k, M); ggml_swiglu_split(gate, up); ggml_mul_mat_id(down_exps,
// ., ids) (d, k, M); ggml_mul by the weights (1, k, M); then the k views
// (d, M) summed with ggml_add, in j order. ids (I32, k x M) and the weights
// are the graph's inputs, set before every compute as llama.cpp sets its
// inputs (here they replace the router, the top-k and the weights' norm,
// which are no part of either side's timing). The stacked weights (in, out,
// E) live where llama.cpp puts them: the first extra buffer type whose
// mul_mat_id the CPU device takes (CPU_REPACK for Q4_0 and Q4_K on AVX2
// CPUs), else the plain CPU buffer.
//
// Ours: swiglu::Experts of E Ffns, each built from the expert's f32 weights
// with Options{T, dtype}; forward(x, y, M, ids, weights, k).
//
// The experts differ (each its own seed), so a wrong id shows in the check:
// before a row is timed both sides run its first routing; their outputs
// are compared with each other (rel err) and, over the first kRefTokens
// tokens, with an fp64 evaluation of the same routing on the dequantised
// weights (err64).
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/moe.hpp>
#include "bench_dtypes.hpp"
#include "ggml_peer.hpp"
#include "interleaved_timing.hpp"
#include "moe_shapes.hpp"
#include "weights.hpp"

namespace swiglu_ggml_peer {
namespace {

using swiglu_bench::MoeDraw;
using swiglu_bench::MoeShape;

// Tokens the fp64 reference covers: the first rows of every M's x
// (make_input's values are a pure function of (seed, index)).
constexpr std::int64_t kRefTokens = 4;
constexpr std::uint64_t kInputSeed = 42;

// Expert e's f32 weights, PyTorch's (out, in): gate, up (f, d), down (d, f),
// uniform in +-1/sqrt(in), each matrix its own seed (the same on every run).
struct ExpertSource {
    std::vector<float> m[3];  // gate, up, down
};

ExpertSource expert_source(const MoeShape& s, std::int64_t e) {
    ExpertSource src;
    const std::uint64_t base =
        (std::uint64_t(s.d) * 1000003u + std::uint64_t(s.f)) * 4096u + std::uint64_t(e) * 4u;
    const std::int64_t rows[3] = {s.f, s.f, s.d}, in[3] = {s.d, s.d, s.f};
    for (int i = 0; i < 3; ++i) {
        src.m[i] = swiglu_bench::make_input(rows[i], in[i], base + std::uint64_t(i));
        const float scale = 1.0f / std::sqrt(float(in[i]));
        for (float& v : src.m[i]) v *= scale;
    }
    return src;
}

// The three formats of an entry: gate, up, down.
Dtype format_of(const BenchDtype& bd, int i) { return i == 2 ? bd.down : bd.dtype; }

// The stacked experts in ggml: gate_exps, up_exps (d, f, E), down_exps
// (f, d, E), each in the buffer type llama.cpp would choose.
struct GgmlExperts {
    ggml_context* ctx = nullptr;
    std::vector<ggml_backend_buffer_t> buffers;
    ggml_tensor* t[3] = {};  // gate, up, down
    std::string buft;        // buffer type names, e.g. "CPU_REPACK"
    // Ours quantises the first and the last expert's matrices to ggml's
    // blocks (every expert's would double the build of the K-quants: our
    // quantiser and ggml's are deterministic row by row, so two experts
    // with their own seeds are a check of the same code).
    bool same_blocks = true;
    // A repack buffer takes a tensor whole (its set_tensor repacks all of
    // it at once): its experts gather here first.
    std::vector<char> staging[3];

    GgmlExperts(const Backend& be, const MoeShape& s, const BenchDtype& bd) {
        ggml_init_params p = {ggml_tensor_overhead() * 4, nullptr, true};
        ctx = ggml_init(p);
        const std::int64_t in[3] = {s.d, s.d, s.f}, out[3] = {s.f, s.f, s.d};
        for (int i = 0; i < 3; ++i) {
            const ggml_type type = ggml_type_of(format_of(bd, i));
            t[i] = ggml_new_tensor_3d(ctx, type, in[i], out[i], s.experts);
            ggml_backend_buffer_type_t bt = be.weight_buft(type, in[i], out[i], s.experts, s.top_k);
            ggml_backend_buffer_t buf =
                ggml_backend_buft_alloc_buffer(bt, ggml_backend_buft_get_alloc_size(bt, t[i]) +
                                                       ggml_backend_buft_get_alignment(bt));
            if (!buf) {
                std::fprintf(stderr, "ggml: could not allocate %s's experts\n", s.name);
                std::exit(1);
            }
            ggml_tallocr ta = ggml_tallocr_new(buf);
            ggml_tallocr_alloc(&ta, t[i]);
            buffers.push_back(buf);
            const std::string name = ggml_backend_buft_name(bt);
            if (buft.find(name) == std::string::npos) buft += (buft.empty() ? "" : "+") + name;
            if (bt != ggml_backend_cpu_buffer_type()) staging[i].resize(ggml_nbytes(t[i]));
        }
    }

    // Expert e's matrix i from its f32 values: converted (bf16) or
    // quantised (ggml_quantize_chunk, no imatrix) by ggml into `bytes`,
    // checked against our quantiser's blocks (the first and last expert)
    // and put in place.
    void set(int i, std::int64_t e, Dtype format, const float* src, std::vector<char>& bytes) {
        ggml_tensor* w = t[i];
        const std::int64_t n = w->ne[0], rows = w->ne[1];
        bytes.resize(ggml_row_size(w->type, n) * std::size_t(rows));
        if (w->type == GGML_TYPE_BF16)
            ggml_fp32_to_bf16_row(src, (ggml_bf16_t*)bytes.data(), n * rows);
        else
            ggml_quantize_chunk(w->type, src, bytes.data(), 0, rows, n, nullptr);
        if (swiglu_bench::is_grouped(format) && (e == 0 || e == w->ne[2] - 1))
            same_blocks =
                same_blocks && swiglu_ggml_peer::same_blocks(format, src, rows, n, bytes.data());
        const std::size_t offset = std::size_t(e) * w->nb[2];
        if (!staging[i].empty())
            std::memcpy(staging[i].data() + offset, bytes.data(), bytes.size());
        else
            ggml_backend_tensor_set(w, bytes.data(), offset, bytes.size());
    }

    // Every expert set: the staged tensors go to their buffers (repacked).
    void finish() {
        for (int i = 0; i < 3; ++i)
            if (!staging[i].empty()) {
                ggml_backend_tensor_set(t[i], staging[i].data(), 0, staging[i].size());
                std::vector<char>().swap(staging[i]);
            }
    }

    ~GgmlExperts() {
        for (auto* b : buffers) ggml_backend_buffer_free(b);
        ggml_free(ctx);
    }
    GgmlExperts(const GgmlExperts&) = delete;
    GgmlExperts& operator=(const GgmlExperts&) = delete;
};

// The routed experts' graph for M tokens, as build_moe_ffn builds it.
struct GgmlMoeGraph {
    ggml_context* ctx = nullptr;
    ggml_cgraph* graph = nullptr;
    ggml_gallocr_t alloc = nullptr;
    ggml_tensor *x = nullptr, *ids = nullptr, *weights = nullptr, *y = nullptr;

    GgmlMoeGraph(const GgmlExperts& w, const MoeShape& s, std::int64_t tokens) {
        const std::int64_t k = s.top_k;
        ggml_init_params p = {
            ggml_tensor_overhead() * std::size_t(16 + 2 * k) + ggml_graph_overhead(), nullptr,
            true};
        ctx = ggml_init(p);
        x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s.d, tokens);
        ggml_set_input(x);
        // Kept intact across calls, as ours reads its x in place (ggml_gallocr
        // would reuse an input's memory once its last reader ran).
        ggml_set_output(x);
        ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, k, tokens);
        ggml_set_input(ids);
        weights = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 1, k, tokens);
        ggml_set_input(weights);
        graph = ggml_new_graph(ctx);
        ggml_build_forward_expand(graph, weights);
        ggml_tensor* cur = ggml_reshape_3d(ctx, x, s.d, 1, tokens);
        ggml_tensor* up = ggml_mul_mat_id(ctx, w.t[1], cur, ids);    // (f, k, M)
        ggml_tensor* gate = ggml_mul_mat_id(ctx, w.t[0], cur, ids);  // (f, k, M)
        ggml_tensor* act = ggml_swiglu_split(ctx, gate, up);
        ggml_tensor* experts = ggml_mul_mat_id(ctx, w.t[2], act, ids);  // (d, k, M)
        experts = ggml_mul(ctx, experts, weights);
        ggml_build_forward_expand(graph, experts);
        std::vector<ggml_tensor*> views(static_cast<std::size_t>(k));
        for (std::int64_t j = 0; j < k; ++j) {
            views[std::size_t(j)] = ggml_view_2d(ctx, experts, s.d, tokens, experts->nb[2],
                                                 std::size_t(j) * experts->nb[1]);
            ggml_build_forward_expand(graph, views[std::size_t(j)]);
        }
        y = views[0];
        for (std::int64_t j = 1; j < k; ++j) {
            y = ggml_add(ctx, y, views[std::size_t(j)]);
            ggml_build_forward_expand(graph, y);
        }
        if (k == 1) y = ggml_cont(ctx, y);
        ggml_set_output(y);
        ggml_build_forward_expand(graph, y);
        alloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
        if (!ggml_gallocr_alloc_graph(alloc, graph)) {
            std::fprintf(stderr, "ggml_gallocr_alloc_graph failed\n");
            std::exit(1);
        }
    }

    // One call: the routing's inputs set, then the graph computed.
    void run(const Backend& be, const MoeDraw& draw) const {
        ggml_backend_tensor_set(ids, draw.ids.data(), 0, draw.ids.size() * sizeof(std::int32_t));
        ggml_backend_tensor_set(weights, draw.weights.data(), 0,
                                draw.weights.size() * sizeof(float));
        compute(be, graph);
    }

    ~GgmlMoeGraph() {
        ggml_gallocr_free(alloc);
        ggml_free(ctx);
    }
    GgmlMoeGraph(const GgmlMoeGraph&) = delete;
    GgmlMoeGraph& operator=(const GgmlMoeGraph&) = delete;
};

// sum a[i] * b[i] in double, four partial sums (the reference's loops).
template <typename A, typename B>
double dot(const A* a, const B* b, std::int64_t n) {
    double s[4] = {0, 0, 0, 0};
    std::int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; ++l) s[l] += double(a[i + l]) * double(b[i + l]);
    for (; i < n; ++i) s[0] += double(a[i]) * double(b[i]);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

// One expert's output for one token in fp64 on its dequantised weights.
std::vector<double> expert_fp64(const std::vector<float> (&w)[3], const float* x,
                                const MoeShape& s) {
    std::vector<double> act(std::size_t(s.f)), y(std::size_t(s.d));
    for (std::int64_t j = 0; j < s.f; ++j) {
        const double g = dot(w[0].data() + j * s.d, x, s.d);
        const double u = dot(w[1].data() + j * s.d, x, s.d);
        act[std::size_t(j)] = g / (1.0 + std::exp(-g)) * u;
    }
    for (std::int64_t o = 0; o < s.d; ++o)
        y[std::size_t(o)] = dot(w[2].data() + o * s.f, act.data(), s.f);
    return y;
}

// ggml's experts for an entry, and each (expert, reference token) output
// in fp64 that the rows' first routings need.
struct Built {
    std::unique_ptr<GgmlExperts> ggml;
    std::vector<std::vector<double>> ref;  // [e * kRefTokens + r]; empty: not needed
};

Built build_ggml(const Backend& be, const MoeShape& s, const BenchDtype& bd,
                 const std::vector<std::int64_t>& tokens) {
    Built b;
    b.ggml = std::make_unique<GgmlExperts>(be, s, bd);
    // The (expert, token) pairs of every row's first routing, tokens < kRefTokens.
    std::vector<bool> need(std::size_t(s.experts * kRefTokens), false);
    for (std::int64_t m : tokens) {
        const MoeDraw first = swiglu_bench::make_moe_draws(s, m, 0).front();
        for (std::int64_t t = 0; t < std::min(m, kRefTokens); ++t)
            for (std::int64_t j = 0; j < s.top_k; ++j)
                need[std::size_t(first.ids[std::size_t(t * s.top_k + j)] * kRefTokens + t)] = true;
    }
    b.ref.resize(need.size());
    const std::vector<float> x = swiglu_bench::make_input(kRefTokens, s.d, kInputSeed);
    std::vector<char> bytes[3];
    std::vector<float> deq[3];
    for (std::int64_t e = 0; e < s.experts; ++e) {
        const ExpertSource src = expert_source(s, e);
        for (int i = 0; i < 3; ++i) b.ggml->set(i, e, format_of(bd, i), src.m[i].data(), bytes[i]);
        bool any = false;
        for (std::int64_t r = 0; r < kRefTokens; ++r)
            any = any || need[std::size_t(e * kRefTokens + r)];
        if (!any) continue;
        // ggml's decoding of its own blocks: the weights both sides hold.
        for (int i = 0; i < 3; ++i) {
            deq[i].resize(src.m[i].size());
            ggml_get_type_traits(b.ggml->t[i]->type)
                ->to_float(bytes[i].data(), deq[i].data(), std::int64_t(deq[i].size()));
        }
        for (std::int64_t r = 0; r < kRefTokens; ++r)
            if (need[std::size_t(e * kRefTokens + r)])
                b.ref[std::size_t(e * kRefTokens + r)] = expert_fp64(deq, x.data() + r * s.d, s);
    }
    b.ggml->finish();
    return b;
}

// Ours: E Ffns, each from its expert's f32 weights, in one Experts.
std::unique_ptr<swiglu::Experts> build_ours(const MoeShape& s, const BenchDtype& bd, int threads) {
    std::vector<swiglu::Ffn> blocks;
    blocks.reserve(std::size_t(s.experts));
    for (std::int64_t e = 0; e < s.experts; ++e) {
        const ExpertSource src = expert_source(s, e);
        blocks.emplace_back(swiglu::WeightView::out_in(src.m[0].data(), s.f, s.d),
                            swiglu::WeightView::out_in(src.m[1].data(), s.f, s.d),
                            swiglu::WeightView::out_in(src.m[2].data(), s.d, s.f),
                            ours_options(threads, bd));
    }
    return std::make_unique<swiglu::Experts>(std::move(blocks));
}

// max|y - y_ref| / max|y_ref| over the first min(M, kRefTokens) tokens of
// `draw`, y_ref = sum_j w[t, j] * ref[ids[t, j], t]; adds the squares to
// the rms sums.
double err64(const float* y, const Built& b, const MoeShape& s, const MoeDraw& draw,
             std::int64_t tokens, double& sq, double& ref_sq) {
    double diff = 0, scale = 0;
    std::vector<double> want(std::size_t(s.d));
    for (std::int64_t t = 0; t < std::min(tokens, kRefTokens); ++t) {
        std::fill(want.begin(), want.end(), 0.0);
        for (std::int64_t j = 0; j < s.top_k; ++j) {
            const std::size_t at = std::size_t(t * s.top_k + j);
            const std::vector<double>& out = b.ref[std::size_t(draw.ids[at] * kRefTokens + t)];
            for (std::int64_t o = 0; o < s.d; ++o)
                want[std::size_t(o)] += double(draw.weights[at]) * out[std::size_t(o)];
        }
        for (std::int64_t o = 0; o < s.d; ++o) {
            const double e = double(y[t * s.d + o]) - want[std::size_t(o)];
            diff = std::max(diff, std::fabs(e));
            scale = std::max(scale, std::fabs(want[std::size_t(o)]));
            sq += e * e;
            ref_sq += want[std::size_t(o)] * want[std::size_t(o)];
        }
    }
    return scale > 0 ? diff / scale : diff;
}

double seconds_of(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void print_header() {
    std::printf(
        "\n| shape | d | f | E | k | dtype | M | T | experts/call | ours ms | ggml ms | ggml/ours "
        "| ours GB/s | ggml GB/s | rel err | ours err64 | ggml err64 | note |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

// Both sides' rows for one (shape, entry); returns the rows over the
// check's bound, and appends the entry's error line to `summaries`.
int run_entry(const Backend& be, const MoeArgs& args, const MoeShape& s, const BenchDtype& bd,
              std::vector<std::string>& summaries) {
    const auto t0 = std::chrono::steady_clock::now();
    const Built built = build_ggml(be, s, bd, args.tokens);
    std::fprintf(stderr, "%s %s: ggml's experts and the fp64 reference built in %.1f s\n", s.name,
                 bd.name,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const GgmlExperts& gw = *built.ggml;
    const double expert_bytes = swiglu_bench::weight_bytes({s.name, s.d, s.f}, bd);
    double worst[2] = {0, 0}, sq[2] = {0, 0}, ref_sq = 0;
    int mismatches = 0;
    for (int threads : args.threads) {
        const auto t1 = std::chrono::steady_clock::now();
        const std::unique_ptr<swiglu::Experts> ours = build_ours(s, bd, threads);
        std::fprintf(stderr, "%s %s: ours (T = %d) built in %.1f s\n", s.name, bd.name, threads,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
        ggml_backend_cpu_set_n_threads(be.cpu, threads);
        for (std::int64_t m : args.tokens) {
            const std::vector<MoeDraw> draws = swiglu_bench::make_moe_draws(s, m, expert_bytes);
            double bytes = 0, experts_read = 0;
            for (const MoeDraw& d : draws) {
                bytes += d.bytes / double(draws.size());
                experts_read += d.bytes / expert_bytes / double(draws.size());
            }
            const GgmlMoeGraph g(gw, s, m);
            const std::vector<float> x = swiglu_bench::make_input(m, s.d, kInputSeed);
            ggml_backend_tensor_set(g.x, x.data(), 0, x.size() * sizeof(float));
            std::vector<float> y(x.size());

            // The check: both on the first routing, before any timing.
            const MoeDraw& first = draws.front();
            const double call_s = seconds_of([&] {
                ours->forward(x.data(), y.data(), m, first.ids.data(), first.weights.data(),
                              s.top_k);
            });
            g.run(be, first);
            const float* y_ggml = (const float*)g.y->data;
            const double err = rel_err(y.data(), y_ggml, y.size());
            double ref_unused = 0;
            const double e_ours = err64(y.data(), built, s, first, m, sq[0], ref_sq);
            const double e_ggml = err64(y_ggml, built, s, first, m, sq[1], ref_unused);
            worst[0] = std::max(worst[0], e_ours);
            worst[1] = std::max(worst[1], e_ggml);

            // Short calls: one call of each routing first, so that the timed
            // ones find their scratch made (as the moe/ rows do).
            if (call_s < 0.05)
                for (const MoeDraw& d : draws) {
                    ours->forward(x.data(), y.data(), m, d.ids.data(), d.weights.data(), s.top_k);
                    g.run(be, d);
                }
            std::size_t next_ours = 0, next_ggml = 0;
            const auto r = swiglu_bench::time_interleaved(
                [&] {
                    const MoeDraw& d = draws[next_ours];
                    next_ours = (next_ours + 1) % draws.size();
                    ours->forward(x.data(), y.data(), m, d.ids.data(), d.weights.data(), s.top_k);
                },
                [&] {
                    g.run(be, draws[next_ggml]);
                    next_ggml = (next_ggml + 1) % draws.size();
                });

            std::string note = gw.buft;
            if (!gw.same_blocks) note += " BLOCKS DIFFER";
            if (!(err <= max_err(bd.dtype))) {
                note += " MISMATCH";
                mismatches++;
            }
            if (r.noisy) note += " noisy";
            if (r.others > swiglu_bench::kBusyCpus) note += " busy";
            std::printf(
                "| %s | %lld | %lld | %lld | %lld | %s | %lld | %d | %.1f | %.4g | %.4g | %.2f | "
                "%.1f | %.1f | %.1e | %.2e | %.2e | %s |\n",
                s.name, (long long)s.d, (long long)s.f, (long long)s.experts, (long long)s.top_k,
                bd.name, (long long)m, threads, experts_read, r.a.median * 1e3, r.b.median * 1e3,
                r.ratio.median, bytes / r.a.median * 1e-9, bytes / r.b.median * 1e-9, err, e_ours,
                e_ggml, note.c_str());
            std::fflush(stdout);
        }
    }
    if (ref_sq > 0) {
        const double ours_rms = std::sqrt(sq[0] / ref_sq), ggml_rms = std::sqrt(sq[1] / ref_sq);
        char line[320];
        std::snprintf(line, sizeof line,
                      "%s %s: max-norm ours %.3e, ggml %.3e; rms ours %.3e, ggml %.3e; ours/ggml "
                      "(rms) %.3f",
                      s.name, bd.name, worst[0], worst[1], ours_rms, ggml_rms,
                      ggml_rms > 0 ? ours_rms / ggml_rms : 0.0);
        summaries.push_back(line);
    }
    return mismatches;
}

}  // namespace

int run_moe(const Backend& be, const MoeArgs& args) {
    std::printf(
        "\nMoE rows: the routed experts of one layer, y[t] = sum_j w[t, j] * "
        "expert_{ids[t, j]}(x[t]).\n"
        "ours: swiglu::Experts(E Ffns from f32 weights, Options{T, dtype}); forward(x, y, M, ids, "
        "weights, k)\n"
        "ggml: llama.cpp's build_moe_ffn: ggml_mul_mat_id (up, gate), ggml_swiglu_split, "
        "ggml_mul_mat_id (down), ggml_mul (weights), k - 1 ggml_add; ids and weights set before "
        "each compute\n"
        "Routing: %d draws (uniform k of E, fixed seed per M) cycled call by call on both sides. "
        "experts/call: distinct experts a call reads (mean over the draws); GB/s: their bytes / "
        "time. rel err: max|y_ours - y_ggml| / max|y_ggml| on the first draw; err64: each side "
        "against fp64 on the dequantised weights (first %lld tokens). note: buffer type of "
        "ggml's experts\n",
        swiglu_bench::kMoeDraws, (long long)kRefTokens);
    if (listed(args.dtypes, "f32"))
        std::printf("(f32 left out of the MoE rows: 2.4-5.6 GB of experts per side)\n");
    print_header();
    std::fflush(stdout);
    int mismatches = 0;
    std::vector<std::string> summaries;
    for (const MoeShape& s : swiglu_bench::moe_shapes()) {
        if (!listed(args.shapes, s.name)) continue;
        for (const BenchDtype& bd : swiglu_bench::all_dtypes())
            if (bd.dtype != Dtype::f32 && has_ggml_type(bd.dtype) && listed(args.dtypes, bd.name))
                mismatches += run_entry(be, args, s, bd, summaries);
    }
    if (!summaries.empty()) {
        std::printf(
            "\nMoE error vs an fp64 evaluation on the dequantised weights (each row's first "
            "routing, its first %lld tokens):\n",
            (long long)kRefTokens);
        for (const std::string& line : summaries) std::printf("%s\n", line.c_str());
    }
    return mismatches;
}

}  // namespace swiglu_ggml_peer
