// swiglu_ggml_peer: the SwiGLU block in swiglu and in llama.cpp's ggml CPU
// backend, in one process, on the same weights and the same x, timed in
// alternating batches (interleaved_timing.hpp). bench/peers/README.md.
//
//   swiglu_ggml_peer [--quick] [--moe] [--shapes glass,cyber,llama7b]
//                    [--dtypes f32,bf16,q8_0,q4_0,q4_k,q5_k,q6_k,q4_k_m]
//                    [--tokens 1,16,128,512] [--threads 1,2] [--tsv FILE]
//
// --tsv FILE: the dense rows also go to FILE, tab-separated, for scripts
// (scripts/peers.sh); the columns are torch_peer.py's --tsv ones.
// --moe, or MoE shapes (qwen3moe, olmoe, mixtral) in --shapes: the routed
// experts' rows (ggml_peer_moe.cpp) instead of, or after, the dense block's.
//
// ggml's side is what llama.cpp runs for a dense FFN: three ggml_mul_mat
// and ggml_swiglu_split in one graph, built once per (shape, M) and computed
// by the CPU backend with T threads. Weights (ne0 = in, ne1 = out) live in
// the buffer type llama.cpp would choose: the CPU backend's "extra" repack
// buffer where it supports the mul_mat (Q4_0 -> q4_0_8x8 and Q4_K ->
// q4_K_8x8 on AVX2 CPUs; Q5_K and Q6_K have no x86 repack), else the plain
// CPU buffer. The blocks come from ggml's own quantiser (ggml_quantize_chunk,
// no imatrix: the reference rounding); ours quantises the same f32 weights
// to the same blocks, which is checked: every matrix's blocks are compared
// byte for byte with our format table's quantiser ("same blocks").
// q4_k_m is llama.cpp's Q4_K_M mix for a dense FFN: gate and up Q4_K, down
// Q6_K (ours: Options::down_dtype).
//
// Block formats also get each side's error against an fp64 evaluation of
// the block on the dequantised weights (the same on both sides), over the
// first kRefRows tokens: what each side's activation quantisation (and
// summation order) costs, the weights' rounding left out.
#include "ggml_peer.hpp"

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_dtypes.hpp"
#include "formats/format_table.hpp"
#include "interleaved_timing.hpp"
#include "moe_shapes.hpp"
#include "shapes.hpp"
#include "swiglu/swiglu.hpp"
#include "weights.hpp"

namespace swiglu_ggml_peer {

bool same_blocks(Dtype dtype, const float* src, std::int64_t rows, std::int64_t n,
                 const char* bytes) {
    const swiglu::detail::FormatTraits& t = swiglu::detail::traits(dtype);
    const std::size_t row_bytes = swiglu::detail::row_bytes(t, n);
    std::vector<std::max_align_t> ours(row_bytes / sizeof(std::max_align_t) + 1);
    for (std::int64_t r = 0; r < rows; ++r) {
        t.quantize(src + r * n, std::size_t(n), ours.data());
        if (std::memcmp(ours.data(), bytes + std::size_t(r) * row_bytes, row_bytes) != 0)
            return false;
    }
    return true;
}

Backend::Backend() {
    cpu = ggml_backend_cpu_init();
    dev = ggml_backend_get_device(cpu);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    auto get_extra = (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(
        reg, "ggml_backend_dev_get_extra_bufts");
    if (get_extra)
        for (auto* b = get_extra(dev); b && *b; ++b) extra.push_back(*b);
}

Backend::~Backend() { ggml_backend_free(cpu); }

ggml_backend_buffer_type_t Backend::weight_buft(ggml_type type, std::int64_t in, std::int64_t out,
                                                std::int64_t experts, std::int64_t used) const {
    for (auto* buft : extra) {
        ggml_init_params p = {ggml_tensor_overhead() * 4, nullptr, true};
        ggml_context* ctx = ggml_init(p);
        ggml_tensor* op = nullptr;
        ggml_tensor* w = nullptr;
        if (experts > 0) {
            // llama.cpp's probe for an expert tensor: 512 tokens, `used`
            // experts each, b already one row per chosen expert.
            w = ggml_new_tensor_3d(ctx, type, in, out, experts);
            ggml_tensor* x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, in, used, 512);
            ggml_tensor* ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, used, 512);
            op = ggml_mul_mat_id(ctx, w, x, ids);
        } else {
            w = ggml_new_tensor_2d(ctx, type, in, out);
            ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, in, 512);
            op = ggml_mul_mat(ctx, w, x);
        }
        ggml_backend_buffer_t dummy = ggml_backend_buft_alloc_buffer(buft, 0);
        w->buffer = dummy;
        const bool ok = ggml_backend_dev_supports_op(dev, op);
        ggml_backend_buffer_free(dummy);
        ggml_free(ctx);
        if (ok) return buft;
    }
    return ggml_backend_cpu_buffer_type();
}

void compute(const Backend& be, ggml_cgraph* graph) {
    if (ggml_backend_graph_compute(be.cpu, graph) != GGML_STATUS_SUCCESS) {
        std::fprintf(stderr, "ggml_backend_graph_compute failed\n");
        std::exit(1);
    }
}

}  // namespace swiglu_ggml_peer

namespace {

using namespace swiglu_ggml_peer;
using swiglu_bench::Shape;

// ggml's rows of a block format are whole blocks (32, or 256 for the
// K-quants), so the shape's d and f are rounded up to the entry's block:
// glass (128, 341) runs as (128, 352) in q8_0 / q4_0 and as (256, 512) in
// the K-quants, cyber's d = 384 as 512.
Shape padded_shape(Shape s, const BenchDtype& bd) {
    namespace sd = swiglu::detail;
    const std::int64_t block = std::max(sd::traits(bd.dtype).block, sd::traits(bd.down).block);
    s.d = (s.d + block - 1) / block * block;
    s.f = (s.f + block - 1) / block * block;
    return s;
}

// One block's three weights in ggml.
struct GgmlWeights {
    ggml_context* ctx = nullptr;
    std::vector<ggml_backend_buffer_t> buffers;
    ggml_tensor *gate = nullptr, *up = nullptr, *down = nullptr;
    std::string buft;  // buffer type names, e.g. "CPU_REPACK"
    // The dequantised weights (out, in) of a block format, ggml's decoding
    // of its own blocks (for the fp64 reference); empty otherwise.
    std::vector<float> gate_deq, up_deq, down_deq;
    bool same_blocks = true;  // ours quantises each matrix to ggml's blocks

    GgmlWeights(const Backend& be, const swiglu_bench::ShapeWeights& w, const BenchDtype& bd) {
        const Shape& s = w.shape;
        ggml_init_params p = {ggml_tensor_overhead() * 4, nullptr, true};
        ctx = ggml_init(p);
        gate = ggml_new_tensor_2d(ctx, ggml_type_of(bd.dtype), s.d, s.f);
        up = ggml_new_tensor_2d(ctx, ggml_type_of(bd.dtype), s.d, s.f);
        down = ggml_new_tensor_2d(ctx, ggml_type_of(bd.down), s.f, s.d);
        const float* src[3] = {w.gate.get(), w.up.get(), w.down.get()};
        ggml_tensor* dst[3] = {gate, up, down};
        const Dtype formats[3] = {bd.dtype, bd.dtype, bd.down};
        std::vector<float>* deq[3] = {&gate_deq, &up_deq, &down_deq};
        for (int i = 0; i < 3; ++i) {
            ggml_tensor* t = dst[i];
            const ggml_type type = t->type;
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
            if (swiglu_bench::is_grouped(formats[i]))
                keep_blocks(formats[i], src[i], *t, bytes, *deq[i]);
            ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
        }
    }
    // A block format's matrix `t`, quantised by ggml to `bytes` from `src`:
    // compared with our quantiser's blocks, and decoded into `deq`.
    void keep_blocks(Dtype format, const float* src, const ggml_tensor& t,
                     const std::vector<char>& bytes, std::vector<float>& deq) {
        same_blocks = same_blocks &&
                      swiglu_ggml_peer::same_blocks(format, src, t.ne[1], t.ne[0], bytes.data());
        deq.resize(std::size_t(t.ne[0] * t.ne[1]));
        ggml_get_type_traits(t.type)->to_float(bytes.data(), deq.data(), t.ne[0] * t.ne[1]);
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

// The dense rows' arguments and the MoE rows' (moe.shapes empty: none).
// Options given apply to both; the defaults differ: the MoE rows run
// bf16, q8_0, q4_0 and q4_k at 1, 4, 16, 128 and 512 tokens on 2 threads.
struct Args {
    std::vector<std::string> shapes = {"glass", "cyber", "llama7b"};
    std::vector<std::string> dtypes = {"f32",  "bf16", "q8_0", "q4_0",
                                       "q4_k", "q5_k", "q6_k", "q4_k_m"};
    std::vector<int64_t> tokens = {1, 16, 128, 512};
    std::vector<int> threads = {1, 2};
    std::string tsv;  // --tsv FILE: the dense rows, tab-separated ("": none)
    MoeArgs moe;
};

bool is_dense_shape(const std::string& name) {
    for (const Shape& s : swiglu_bench::all_shapes())
        if (name == s.name) return true;
    return false;
}

bool is_moe_shape(const std::string& name) {
    for (const swiglu_bench::MoeShape& s : swiglu_bench::moe_shapes())
        if (name == s.name) return true;
    return false;
}

[[noreturn]] void usage(int status) {
    std::fprintf(status ? stderr : stdout,
                 "usage: swiglu_ggml_peer [--quick] [--moe] [--shapes glass,cyber,llama7b]\n"
                 "       [--dtypes f32,bf16,q8_0,q4_0,q4_k,q5_k,q6_k,q4_k_m]\n"
                 "       [--tokens 1,16,128,512] [--threads 1,2] [--tsv FILE]\n"
                 "  --moe: the MoE rows (qwen3moe, olmoe, mixtral; default dtypes\n"
                 "  bf16,q8_0,q4_0,q4_k, tokens 1,4,16,128,512, threads 2) instead of the\n"
                 "  dense ones; MoE shapes may also be named in --shapes\n"
                 "  --tsv FILE: the dense rows also to FILE, tab-separated\n");
    std::exit(status);
}

Args parse(int argc, char** argv) {
    Args a;
    bool moe = false, shapes_given = false, dtypes_given = false, tokens_given = false,
         threads_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--quick") {
            a.shapes = {"glass", "cyber"};
        } else if (arg == "--moe") {
            moe = true;
        } else if (arg == "--shapes" && has_value) {
            a.shapes = split(argv[++i]);
            shapes_given = true;
            for (const std::string& name : a.shapes)
                if (!is_dense_shape(name) && !is_moe_shape(name)) {
                    std::fprintf(stderr,
                                 "swiglu_ggml_peer: --shapes: '%s' is not one of glass, cyber, "
                                 "llama7b, qwen3moe, olmoe, mixtral\n",
                                 name.c_str());
                    std::exit(2);
                }
        } else if (arg == "--dtypes" && has_value) {
            a.dtypes = split(argv[++i]);
            dtypes_given = true;
            for (const std::string& name : a.dtypes) {
                const BenchDtype* bd = swiglu_bench::find_dtype(name);
                if (!bd || !has_ggml_type(bd->dtype)) {
                    std::fprintf(stderr,
                                 "swiglu_ggml_peer: --dtypes: '%s' is not one of f32, "
                                 "bf16, q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m (what ggml has "
                                 "too)\n",
                                 name.c_str());
                    std::exit(2);
                }
            }
        } else if (arg == "--tokens" && has_value) {
            a.tokens.clear();
            tokens_given = true;
            for (const auto& t : split(argv[++i])) a.tokens.push_back(std::stoll(t));
        } else if (arg == "--threads" && has_value) {
            a.threads.clear();
            threads_given = true;
            for (const auto& t : split(argv[++i])) a.threads.push_back(std::stoi(t));
        } else if (arg == "--tsv" && has_value) {
            a.tsv = argv[++i];
        } else {
            usage(arg == "--help" || arg == "-h" ? 0 : 2);
        }
    }
    // --moe without --shapes: every MoE shape and no dense one; else the
    // MoE names listed go to the MoE rows.
    if (moe && !shapes_given) {
        a.shapes.clear();
        for (const swiglu_bench::MoeShape& s : swiglu_bench::moe_shapes())
            a.moe.shapes.push_back(s.name);
    } else {
        std::vector<std::string> dense;
        for (const std::string& name : a.shapes)
            (is_moe_shape(name) ? a.moe.shapes : dense).push_back(name);
        a.shapes = dense;
    }
    a.moe.dtypes =
        dtypes_given ? a.dtypes : std::vector<std::string>{"bf16", "q8_0", "q4_0", "q4_k"};
    a.moe.tokens = tokens_given ? a.tokens : swiglu_bench::moe_tokens();
    a.moe.threads = threads_given ? a.threads : std::vector<int>{2};
    return a;
}

void print_header() {
    std::printf(
        "\n| shape | d | f | dtype | M | T | ours ms | ggml ms | ggml/ours | ours GB/s "
        "| ggml GB/s | rel err | ours err64 | ggml err64 | note |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

// Tokens the fp64 reference covers: the first rows of every M's x
// (make_input's values are a pure function of (seed, index), so the first
// rows of x are the same whatever M).
constexpr std::int64_t kRefRows = 16;

// y = down (SiLU(gate x) * (up x)) in fp64 on the dequantised weights, for
// the first `rows` rows of x: the block with no activation quantisation and
// no rounding between the phases.
std::vector<double> reference_fp64(const GgmlWeights& w, const Shape& s, const float* x,
                                   std::int64_t rows) {
    const std::size_t d = std::size_t(s.d), f = std::size_t(s.f);
    std::vector<double> y(std::size_t(rows) * d, 0.0), act(f);
    for (std::size_t r = 0; r < std::size_t(rows); ++r) {
        const float* xr = x + r * d;
        for (std::size_t j = 0; j < f; ++j) {
            double g = 0, u = 0;
            for (std::size_t i = 0; i < d; ++i) {
                g += double(w.gate_deq[j * d + i]) * xr[i];
                u += double(w.up_deq[j * d + i]) * xr[i];
            }
            act[j] = g / (1.0 + std::exp(-g)) * u;
        }
        for (std::size_t o = 0; o < d; ++o) {
            double acc = 0;
            for (std::size_t j = 0; j < f; ++j) acc += double(w.down_deq[o * f + j]) * act[j];
            y[r * d + o] = acc;
        }
    }
    return y;
}

// Both sides' errors against the fp64 reference, over a format's rows.
struct ErrorTally {
    double ours_max = 0, ggml_max = 0;            // the worst row's max|dy| / max|y_ref|
    double ours_sq = 0, ggml_sq = 0, ref_sq = 0;  // for the rms ratio over every value

    // max|y - ref| / max|ref| over the first ref.size() values of y, and
    // the squares into the rms sums.
    static double rel(const float* y, const std::vector<double>& ref, std::size_t n, double& sq,
                      double& ref_sq) {
        double diff = 0, scale = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const double e = double(y[i]) - ref[i];
            diff = std::max(diff, std::fabs(e));
            scale = std::max(scale, std::fabs(ref[i]));
            sq += e * e;
            ref_sq += ref[i] * ref[i];
        }
        return scale > 0 ? diff / scale : diff;
    }

    // Adds one table row's outputs (n values of each); returns the two
    // max-norm errors.
    std::pair<double, double> add(const float* ours, const float* ggml,
                                  const std::vector<double>& ref, std::size_t n) {
        double ref_unused = 0;
        const double o = rel(ours, ref, n, ours_sq, ref_sq);
        const double g = rel(ggml, ref, n, ggml_sq, ref_unused);
        ours_max = std::max(ours_max, o);
        ggml_max = std::max(ggml_max, g);
        return {o, g};
    }

    // One line per format: the issue asks ours' error to be at most 1.05x
    // ggml's (both against fp64 on the same dequantised weights); "" when
    // no row was compared.
    std::string summary(const Shape& s, const BenchDtype& bd) const {
        if (ref_sq <= 0) return "";
        const double ours_rms = std::sqrt(ours_sq / ref_sq), ggml_rms = std::sqrt(ggml_sq / ref_sq);
        const double ratio = ggml_rms > 0 ? ours_rms / ggml_rms : 0;
        char line[320];
        std::snprintf(line, sizeof line,
                      "%s %s: max-norm ours %.3e, ggml %.3e; rms ours %.3e, ggml %.3e; ours/ggml "
                      "(rms) %.3f: %s 1.05",
                      s.name, bd.name, ours_max, ggml_max, ours_rms, ggml_rms, ratio,
                      ratio <= 1.05 ? "within" : "OVER");
        return line;
    }
};

void run_ggml(const Backend& be, const GgmlGraph& g) { compute(be, g.graph); }

// Both sides' timings and errors for one entry on one shape: a table row
// per (M, T). Returns the rows over the check's bound; `summaries` gets
// the entry's error line (block formats).
int run_entry(const Backend& be, const Args& args, const Shape& base, const BenchDtype& bd,
              std::vector<std::string>& summaries, std::FILE* tsv) {
    const Shape shape = swiglu_bench::is_grouped(bd.dtype) ? padded_shape(base, bd) : base;
    const auto w = swiglu_bench::make_weights(shape);
    const GgmlWeights gw(be, *w, bd);
    const auto gv = swiglu::WeightView::out_in(w->gate.get(), shape.f, shape.d);
    const auto uv = swiglu::WeightView::out_in(w->up.get(), shape.f, shape.d);
    const auto dv = swiglu::WeightView::out_in(w->down.get(), shape.d, shape.f);
    std::vector<std::unique_ptr<swiglu::Ffn>> ours;
    for (int t : args.threads)
        ours.push_back(std::make_unique<swiglu::Ffn>(gv, uv, dv, ours_options(t, bd)));
    const bool with_ref = !gw.gate_deq.empty();
    std::vector<double> ref;
    if (with_ref) {
        const auto x_ref = swiglu_bench::make_input(kRefRows, shape.d, 42);
        ref = reference_fp64(gw, shape, x_ref.data(), kRefRows);
    }
    ErrorTally tally;
    int mismatches = 0;
    for (int64_t m : args.tokens) {
        GgmlGraph g(gw, shape.d, m);
        const auto x = swiglu_bench::make_input(m, shape.d, 42);
        ggml_backend_tensor_set(g.x, x.data(), 0, x.size() * sizeof(float));
        std::vector<float> y(x.size());
        for (std::size_t ti = 0; ti < args.threads.size(); ++ti) {
            const int t = args.threads[ti];
            const swiglu::Ffn& ffn = *ours[ti];
            ggml_backend_cpu_set_n_threads(be.cpu, t);
            const auto r = swiglu_bench::time_interleaved(
                [&] { ffn.forward(x.data(), y.data(), m); }, [&] { run_ggml(be, g); });
            // The last calls' outputs: what every timed call computed.
            const float* y_ggml = (const float*)g.y->data;
            const double err = rel_err(y.data(), y_ggml, y.size());
            char err64[2][32] = {"-", "-"};
            if (with_ref) {
                const std::size_t n = std::size_t(std::min(m, kRefRows) * shape.d);
                const auto [o, gg] = tally.add(y.data(), y_ggml, ref, n);
                std::snprintf(err64[0], sizeof err64[0], "%.2e", o);
                std::snprintf(err64[1], sizeof err64[1], "%.2e", gg);
            }
            std::string note = gw.buft;
            if (with_ref && !gw.same_blocks) note += " BLOCKS DIFFER";
            if (!(err <= max_err(bd.dtype))) {
                note += " MISMATCH";
                mismatches++;
            }
            if (r.noisy) note += " noisy";
            if (r.others > swiglu_bench::kBusyCpus) note += " busy";
            char ours_gbs[32] = "", ggml_gbs[32] = "";
            if (m == 1) {
                std::snprintf(ours_gbs, sizeof ours_gbs, "%.1f",
                              swiglu_bench::weight_bytes(shape, bd) / r.a.median * 1e-9);
                std::snprintf(ggml_gbs, sizeof ggml_gbs, "%.1f",
                              swiglu_bench::weight_bytes(shape, bd) / r.b.median * 1e-9);
            }
            std::printf(
                "| %s | %lld | %lld | %s | %lld | %d | %.4g | %.4g | %.2f | %s | %s | %.1e | %s | "
                "%s | %s |\n",
                shape.name, (long long)shape.d, (long long)shape.f, bd.name, (long long)m, t,
                r.a.median * 1e3, r.b.median * 1e3, r.ratio.median, ours_gbs, ggml_gbs, err,
                err64[0], err64[1], note.c_str());
            std::fflush(stdout);
            if (tsv) {
                std::fprintf(tsv, "%s\t%s\t%lld\t%d\t%.6g\t%.6g\t%.4f\t%.2e\t%s\n", shape.name,
                             bd.name, (long long)m, t, r.a.median * 1e3, r.b.median * 1e3,
                             r.ratio.median, err, note.c_str());
                std::fflush(tsv);
            }
        }
    }
    const std::string line = tally.summary(shape, bd);
    if (!line.empty()) summaries.push_back(line);
    return mismatches;
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = parse(argc, argv);
    // Opened first: a bad path changes nothing and times nothing.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> tsv(nullptr, std::fclose);
    if (!args.tsv.empty()) {
        tsv.reset(std::fopen(args.tsv.c_str(), "w"));
        if (!tsv) {
            std::fprintf(stderr, "swiglu_ggml_peer: --tsv: cannot write '%s': %s\n",
                         args.tsv.c_str(), std::strerror(errno));
            return 2;
        }
        std::fprintf(tsv.get(), "shape\tdtype\tM\tT\tours_ms\tpeer_ms\tratio\trel_err\tnote\n");
    }
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
    int mismatches = 0;
    if (!args.shapes.empty()) {
        std::printf(
            "ours: swiglu::Ffn(f32 weights, Options{T, dtype, down_dtype for q4_k_m}); forward(x, "
            "y, M)\n");
        std::printf(
            "ggml/ours: median of per-round ratios (> 1: ours faster). GB/s: weight "
            "bytes per call (M = 1 only). note: buffer type of ggml's weights; "
            "'noisy' = ratio spread > %.0f %%, 'busy' = others used > %.2f CPUs\n",
            100 * swiglu_bench::kNoisySpread, swiglu_bench::kBusyCpus);
        print_header();
        std::fflush(stdout);
        std::vector<std::string> summaries;
        for (const Shape& base : swiglu_bench::all_shapes()) {
            if (!listed(args.shapes, base.name)) continue;
            for (const BenchDtype& bd : swiglu_bench::all_dtypes())
                if (has_ggml_type(bd.dtype) && listed(args.dtypes, bd.name))
                    mismatches += run_entry(be, args, base, bd, summaries, tsv.get());
        }
        if (!summaries.empty()) {
            std::printf(
                "\nerror vs an fp64 evaluation on the dequantised weights (the first %lld tokens "
                "of each row; err64 columns: max|y - y_fp64| / max|y_fp64|):\n",
                (long long)kRefRows);
            for (const std::string& line : summaries) std::printf("%s\n", line.c_str());
        }
    }
    if (!args.moe.shapes.empty()) mismatches += run_moe(be, args.moe);
    if (mismatches) std::printf("\n%d rows MISMATCH: rel err over the check's bound\n", mismatches);
    return mismatches ? 1 : 0;
}
