// swiglu_ggml_peer: the SwiGLU block in swiglu and in llama.cpp's ggml CPU
// backend, in one process, on the same weights and the same x, timed in
// alternating batches (interleaved_timing.hpp). bench/peers/README.md.
//
//   swiglu_ggml_peer [--quick] [--shapes glass,cyber,llama7b]
//                    [--dtypes f32,bf16,q8_0,q4_0] [--tokens 1,16,128,512]
//                    [--threads 1,2]
//
// ggml's side is what llama.cpp runs for a dense FFN: three ggml_mul_mat
// and ggml_swiglu_split in one graph, built once per (shape, M) and computed
// by the CPU backend with T threads. Weights (ne0 = in, ne1 = out) live in
// the buffer type llama.cpp would choose: the CPU backend's "extra" repack
// buffer where it supports the mul_mat (Q4_0 -> q4_0_8x8 on AVX2 CPUs),
// else the plain CPU buffer. Q8_0 / Q4_0 blocks come from ggml's own
// quantiser (ggml_quantize_chunk, no imatrix: the reference rounding); ours
// quantises the same f32 weights to the same blocks.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "interleaved_timing.hpp"
#include "shapes.hpp"
#include "swiglu/swiglu.hpp"
#include "weights.hpp"

namespace {

using swiglu::Dtype;
using swiglu_bench::Shape;

// ggml's type for each dtype both libraries have; int8 (per-channel s8)
// has no ggml counterpart.
bool has_ggml_type(Dtype dtype) { return dtype != Dtype::int8; }

ggml_type ggml_type_of(Dtype dtype) {
    switch (dtype) {
        case Dtype::bf16: return GGML_TYPE_BF16;
        case Dtype::q8_0: return GGML_TYPE_Q8_0;
        case Dtype::q4_0: return GGML_TYPE_Q4_0;
        default: return GGML_TYPE_F32;
    }
}

// The ggml CPU backend and its device, for the whole run.
struct Backend {
    ggml_backend_t cpu = nullptr;
    ggml_backend_dev_t dev = nullptr;
    std::vector<ggml_backend_buffer_type_t> extra;  // the device's extra buffer types

    Backend() {
        cpu = ggml_backend_cpu_init();
        dev = ggml_backend_get_device(cpu);
        ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
        auto get_extra = (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(
            reg, "ggml_backend_dev_get_extra_bufts");
        if (get_extra)
            for (auto* b = get_extra(dev); b && *b; ++b) extra.push_back(*b);
    }
    ~Backend() { ggml_backend_free(cpu); }

    // What llama.cpp's weight_buft_supported does: the first extra buffer
    // type whose mul_mat with this weight the device supports, else the CPU
    // buffer type.
    ggml_backend_buffer_type_t weight_buft(ggml_type type, int64_t in, int64_t out) const {
        for (auto* buft : extra) {
            ggml_init_params p = {ggml_tensor_overhead() * 4, nullptr, true};
            ggml_context* ctx = ggml_init(p);
            ggml_tensor* w = ggml_new_tensor_2d(ctx, type, in, out);
            ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, in, 512);
            ggml_tensor* op = ggml_mul_mat(ctx, w, x);
            ggml_backend_buffer_t dummy = ggml_backend_buft_alloc_buffer(buft, 0);
            w->buffer = dummy;
            const bool ok = ggml_backend_dev_supports_op(dev, op);
            ggml_backend_buffer_free(dummy);
            ggml_free(ctx);
            if (ok) return buft;
        }
        return ggml_backend_cpu_buffer_type();
    }
};

// One block's three weights in ggml.
struct GgmlWeights {
    ggml_context* ctx = nullptr;
    std::vector<ggml_backend_buffer_t> buffers;
    ggml_tensor *gate = nullptr, *up = nullptr, *down = nullptr;
    std::string buft;  // buffer type names, e.g. "CPU_REPACK"

    GgmlWeights(const Backend& be, const swiglu_bench::ShapeWeights& w, Dtype dtype) {
        const Shape& s = w.shape;
        const ggml_type type = ggml_type_of(dtype);
        ggml_init_params p = {ggml_tensor_overhead() * 4, nullptr, true};
        ctx = ggml_init(p);
        gate = ggml_new_tensor_2d(ctx, type, s.d, s.f);
        up = ggml_new_tensor_2d(ctx, type, s.d, s.f);
        down = ggml_new_tensor_2d(ctx, type, s.f, s.d);
        const float* src[3] = {w.gate.get(), w.up.get(), w.down.get()};
        ggml_tensor* dst[3] = {gate, up, down};
        for (int i = 0; i < 3; ++i) {
            ggml_tensor* t = dst[i];
            ggml_backend_buffer_type_t bt = be.weight_buft(type, t->ne[0], t->ne[1]);
            ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(
                bt, ggml_backend_buft_get_alloc_size(bt, t) + ggml_backend_buft_get_alignment(bt));
            ggml_tallocr ta = ggml_tallocr_new(buf);
            ggml_tallocr_alloc(&ta, t);
            buffers.push_back(buf);
            const std::string name = ggml_backend_buft_name(bt);
            if (buft.find(name) == std::string::npos) buft += (buft.empty() ? "" : "+") + name;
            // Converted / quantised once, then set: a repack buffer repacks here.
            const int64_t n = t->ne[0] * t->ne[1];
            std::vector<char> bytes(ggml_row_size(type, t->ne[0]) * t->ne[1]);
            if (type == GGML_TYPE_F32)
                std::memcpy(bytes.data(), src[i], n * sizeof(float));
            else if (type == GGML_TYPE_BF16)
                ggml_fp32_to_bf16_row(src[i], (ggml_bf16_t*)bytes.data(), n);
            else
                ggml_quantize_chunk(type, src[i], bytes.data(), 0, t->ne[1], t->ne[0], nullptr);
            ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
        }
    }
    ~GgmlWeights() {
        for (auto* b : buffers) ggml_backend_buffer_free(b);
        ggml_free(ctx);
    }
    GgmlWeights(const GgmlWeights&) = delete;
    GgmlWeights& operator=(const GgmlWeights&) = delete;
};

// The block's graph for M tokens: x (d, M) -> y (d, M).
struct GgmlGraph {
    ggml_context* ctx = nullptr;
    ggml_cgraph* graph = nullptr;
    ggml_gallocr_t alloc = nullptr;
    ggml_tensor *x = nullptr, *y = nullptr;

    GgmlGraph(const GgmlWeights& w, int64_t d, int64_t tokens) {
        ggml_init_params p = {ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true};
        ctx = ggml_init(p);
        x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, d, tokens);
        ggml_set_input(x);
        // ggml_gallocr reuses an input's memory once its last reader ran (a
        // caller sets inputs before every compute): flagged as an output, x
        // stays intact across calls, as ours reads its x in place.
        ggml_set_output(x);
        ggml_tensor* gate = ggml_mul_mat(ctx, w.gate, x);
        ggml_tensor* up = ggml_mul_mat(ctx, w.up, x);
        ggml_tensor* act = ggml_swiglu_split(ctx, gate, up);
        y = ggml_mul_mat(ctx, w.down, act);
        ggml_set_output(y);
        graph = ggml_new_graph(ctx);
        ggml_build_forward_expand(graph, y);
        alloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
        if (!ggml_gallocr_alloc_graph(alloc, graph)) {
            std::fprintf(stderr, "ggml_gallocr_alloc_graph failed\n");
            std::exit(1);
        }
    }
    ~GgmlGraph() {
        ggml_gallocr_free(alloc);
        ggml_free(ctx);
    }
    GgmlGraph(const GgmlGraph&) = delete;
    GgmlGraph& operator=(const GgmlGraph&) = delete;
};

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

bool listed(const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
}

struct Args {
    std::vector<std::string> shapes = {"glass", "cyber", "llama7b"};
    std::vector<std::string> dtypes = {"f32", "bf16", "q8_0", "q4_0"};
    std::vector<int64_t> tokens = {1, 16, 128, 512};
    std::vector<int> threads = {1, 2};
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--quick") {
            a.shapes = {"glass", "cyber"};
        } else if (arg == "--shapes" && has_value) {
            a.shapes = split(argv[++i]);
        } else if (arg == "--dtypes" && has_value) {
            a.dtypes = split(argv[++i]);
            for (const std::string& name : a.dtypes) {
                Dtype d;
                if (!swiglu::dtype_from_name(name, &d) || !has_ggml_type(d)) {
                    std::fprintf(stderr,
                                 "swiglu_ggml_peer: --dtypes: '%s' is not one of f32, "
                                 "bf16, q8_0, q4_0 (what ggml has too)\n",
                                 name.c_str());
                    std::exit(2);
                }
            }
        } else if (arg == "--tokens" && has_value) {
            a.tokens.clear();
            for (const auto& t : split(argv[++i])) a.tokens.push_back(std::stoll(t));
        } else if (arg == "--threads" && has_value) {
            a.threads.clear();
            for (const auto& t : split(argv[++i])) a.threads.push_back(std::stoi(t));
        } else {
            std::fprintf(stderr,
                         "usage: swiglu_ggml_peer [--quick] [--shapes glass,cyber,llama7b]\n"
                         "       [--dtypes f32,bf16,q8_0,q4_0] [--tokens 1,16,128,512] "
                         "[--threads 1,2]\n");
            std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
        }
    }
    return a;
}

// max|a - b| / max|b|
double rel_err(const std::vector<float>& a, const float* b) {
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, double(std::fabs(a[i] - b[i])));
        ref = std::max(ref, double(std::fabs(b[i])));
    }
    return ref > 0 ? diff / ref : diff;
}

// What the check accepts: f32 and bf16 round the same way on both sides
// (sums differ in order), Q8_0 / Q4_0 quantise activations alike.
double max_err(Dtype dtype) {
    return dtype == Dtype::f32 ? 1e-5 : dtype == Dtype::bf16 ? 1e-3 : 2e-2;
}

void print_header() {
    std::printf(
        "\n| shape | d | f | dtype | M | T | ours ms | ggml ms | ggml/ours | ours GB/s "
        "| ggml GB/s | rel err | note |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = parse(argc, argv);
    ggml_log_set(
        [](ggml_log_level level, const char* text, void*) {
            if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
        },
        nullptr);
    Backend be;
    std::printf("ggml: %s (commit %s); CPU backend, OpenMP; extra buffer types:", ggml_version(),
                ggml_commit());
    for (auto* b : be.extra) std::printf(" %s", ggml_backend_buft_name(b));
    std::printf(
        "\nggml CPU features: AVX2 %d AVX512 %d AVX512_VNNI %d AVX512_BF16 %d; "
        "llamafile %d\n",
        ggml_cpu_has_avx2(), ggml_cpu_has_avx512(), ggml_cpu_has_avx512_vnni(),
        ggml_cpu_has_avx512_bf16(), ggml_cpu_has_llamafile());
    std::printf("ours: swiglu::Ffn(f32 weights, Options{T, dtype}); forward(x, y, M)\n");
    std::printf(
        "ggml/ours: median of per-round ratios (> 1: ours faster). GB/s: weight "
        "bytes per call (M = 1 only). note: buffer type of ggml's weights; "
        "'noisy' = ratio spread > %.0f %%, 'busy' = others used > %.2f CPUs\n",
        100 * swiglu_bench::kNoisySpread, swiglu_bench::kBusyCpus);
    print_header();
    std::fflush(stdout);
    int mismatches = 0;

    for (const Shape& base : swiglu_bench::all_shapes()) {
        if (!listed(args.shapes, base.name)) continue;
        for (Dtype dtype : swiglu::kDtypes) {
            if (!has_ggml_type(dtype) || !listed(args.dtypes, swiglu::dtype_name(dtype))) continue;
            Shape shape = base;
            // ggml's Q8_0 / Q4_0 rows are whole blocks of 32: glass's f = 341
            // becomes 352 for them (down's rows are f long).
            if (swiglu_bench::is_grouped(dtype) && shape.f % 32 != 0)
                shape.f = (shape.f + 31) / 32 * 32;
            const auto w = swiglu_bench::make_weights(shape);
            const GgmlWeights gw(be, *w, dtype);
            const auto gv = swiglu::WeightView::out_in(w->gate.get(), shape.f, shape.d);
            const auto uv = swiglu::WeightView::out_in(w->up.get(), shape.f, shape.d);
            const auto dv = swiglu::WeightView::out_in(w->down.get(), shape.d, shape.f);
            std::vector<std::unique_ptr<swiglu::Ffn>> ours;
            for (int t : args.threads)
                ours.push_back(
                    std::make_unique<swiglu::Ffn>(gv, uv, dv, swiglu::Options{t, dtype}));
            for (int64_t m : args.tokens) {
                GgmlGraph g(gw, shape.d, m);
                const auto x = swiglu_bench::make_input(m, shape.d, 42);
                ggml_backend_tensor_set(g.x, x.data(), 0, x.size() * sizeof(float));
                std::vector<float> y(x.size());
                for (std::size_t ti = 0; ti < args.threads.size(); ++ti) {
                    const int t = args.threads[ti];
                    const swiglu::Ffn& ffn = *ours[ti];
                    ggml_backend_cpu_set_n_threads(be.cpu, t);
                    auto run_ours = [&] { ffn.forward(x.data(), y.data(), m); };
                    auto run_ggml = [&] {
                        if (ggml_backend_graph_compute(be.cpu, g.graph) != GGML_STATUS_SUCCESS) {
                            std::fprintf(stderr, "ggml_backend_graph_compute failed\n");
                            std::exit(1);
                        }
                    };
                    const auto r = swiglu_bench::time_interleaved(run_ours, run_ggml);
                    // The last calls' outputs: what every timed call computed.
                    const double err = rel_err(y, (const float*)g.y->data);
                    std::string note = gw.buft;
                    if (!(err <= max_err(dtype))) {
                        note += " MISMATCH";
                        mismatches++;
                    }
                    if (r.noisy) note += " noisy";
                    if (r.others > swiglu_bench::kBusyCpus) note += " busy";
                    char ours_gbs[32] = "", ggml_gbs[32] = "";
                    if (m == 1) {
                        std::snprintf(ours_gbs, sizeof ours_gbs, "%.1f",
                                      shape.weight_bytes(dtype) / r.a.median * 1e-9);
                        std::snprintf(ggml_gbs, sizeof ggml_gbs, "%.1f",
                                      shape.weight_bytes(dtype) / r.b.median * 1e-9);
                    }
                    std::printf(
                        "| %s | %lld | %lld | %s | %lld | %d | %.4g | %.4g | %.2f | %s | "
                        "%s | %.1e | %s |\n",
                        shape.name, (long long)shape.d, (long long)shape.f,
                        swiglu::dtype_name(dtype), (long long)m, t, r.a.median * 1e3,
                        r.b.median * 1e3, r.ratio.median, ours_gbs, ggml_gbs, err, note.c_str());
                    std::fflush(stdout);
                }
            }
        }
    }
    if (mismatches) std::printf("\n%d rows MISMATCH: rel err over the check's bound\n", mismatches);
    return mismatches ? 1 : 0;
}
