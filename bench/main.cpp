// swiglu_bench: Google Benchmark binary for the swiglu library.
//
//   swiglu_bench [--quick] [--dtype D] [--benchmark_* flags]   the benchmarks
//   swiglu_bench --profile [--quick] [--dtype D]               the profile table
//   swiglu_bench --ridge [--quick] [--dtype D]                 the ridge table
//   swiglu_bench --probe                                       only the machine probe
//   (how to read the profile and ridge tables: docs/benchmarks.md)
//
// --quick skips llama7b (541 MB of f32 weights) for CI smoke runs; --dtype
// f32|bf16|int8|q8_0|q4_0|q4_k|q5_k|q6_k|q4_k_m|all (default all) picks the
// block dtypes (q4_k_m: gate and up in q4_k, down in q6_k, as in llama.cpp's
// Q4_K_M files; a name of the benchmark's, not a swiglu::Dtype).
// The machine probe (peak f32/bf16/int8 rates, DRAM bandwidth) runs first;
// its values go into the benchmark context (console and JSON) and into the
// roofline counters. After the benchmarks a summary pairs each ffn row with its
// baseline row, and shows the 1-token rows' GB/s against the DRAM bandwidth
// probed before and again after the benchmarks (to stderr when the output
// format is not console, so JSON on stdout stays valid).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backward_bench.hpp"
#include "bench_dtypes.hpp"
#include "ffn_bench.hpp"
#include "machine_probe.hpp"
#include "moe_bench.hpp"
#include "shapes.hpp"

namespace {

// Forwards everything to another reporter, after two changes to the ffn and
// baseline rows: their names lose the suffixes Google Benchmark appends for
// per-benchmark settings (/min_time:0.200, /iterations:2, /real_time), so they
// read ffn/<shape>/<dtype>/M:<tokens>/T:<threads> in every format; and, when
// `collect`, they are kept for the summary.
class ForwardingReporter : public benchmark::BenchmarkReporter {
public:
    ForwardingReporter(benchmark::BenchmarkReporter* inner, bool collect)
        : inner_(inner), collect_(collect) {}

    bool ReportContext(const Context& context) override {
        // RunSpecifiedBenchmarks sets the streams on this object (e.g. the
        // --benchmark_out file); the inner reporter writes to the same ones.
        inner_->SetOutputStream(&GetOutputStream());
        inner_->SetErrorStream(&GetErrorStream());
        return inner_->ReportContext(context);
    }

    void ReportRuns(const std::vector<Run>& runs) override {
        std::vector<Run> out = runs;
        for (Run& r : out) {
            const std::string& fn = r.run_name.function_name;
            if (fn.rfind("ffn/", 0) != 0 && fn.rfind("baseline/", 0) != 0) continue;
            r.run_name.min_time.clear();
            r.run_name.iterations.clear();
            r.run_name.time_type.clear();
            if (collect_) collect(r);
        }
        inner_->ReportRuns(out);
    }

    void Finalize() override { inner_->Finalize(); }

    bool console() const { return dynamic_cast<benchmark::ConsoleReporter*>(inner_) != nullptr; }

    // `dram_after`: the DRAM probe repeated after the benchmarks (may be
    // empty); 1-token rows are then shown against both probes.
    void print_summary(std::FILE* out, const std::map<int, double>& dram_after) const {
        std::vector<std::pair<int, const std::string*>> order;
        for (const auto& [key, row] : rows_)
            if (row.ffn.n && row.base.n) order.emplace_back(row.order, &key);
        if (order.empty()) return;
        std::sort(order.begin(), order.end());
        std::fprintf(out, "\nffn vs baseline (speedup = baseline time / ffn time)\n");
        std::fprintf(out, "%-26s %14s %14s %8s %9s %10s\n", "shape/dtype/M/T", "ffn_us",
                     "baseline_us", "speedup", "ffn_roof%", "base_roof%");
        for (const auto& [o, key] : order) {
            const Row& row = rows_.at(*key);
            const double f = row.ffn.ns / row.ffn.n, b = row.base.ns / row.base.n;
            std::fprintf(out, "%-26s %14.2f %14.2f %7.2fx %9.1f %10.1f\n", key->c_str(), f * 1e-3,
                         b * 1e-3, b / f, row.ffn.roof / row.ffn.n, row.base.roof / row.base.n);
        }
        print_decode(out, order, dram_after);
        std::fflush(out);
    }

    // 1-token rows stream the weights once: their GB/s against the DRAM read
    // bandwidth probed before the benchmarks (what roofline_pct uses) and
    // after them, and (llama7b) the row's read_pct (read_beside.hpp).
    void print_decode(std::FILE* out, const std::vector<std::pair<int, const std::string*>>& order,
                      const std::map<int, double>& dram_after) const {
        const swiglu_bench::MachineProbe& probe = swiglu_bench::machine();
        bool header = false;
        for (const auto& [o, key] : order) {
            const std::size_t m = key->find("/M:1/T:");
            if (m == std::string::npos) continue;
            const int threads = std::atoi(key->c_str() + m + 7);
            const Row& row = rows_.at(*key);
            const double gbs = row.ffn.gbs / row.ffn.n;
            const double before = probe.dram(threads);
            const auto after = dram_after.find(threads);
            if (!header) {
                std::fprintf(out,
                             "\n1-token rows vs DRAM read bandwidth probed before and after, "
                             "and vs a plain read of the same bytes interleaved with them "
                             "(read%%)\n");
                std::fprintf(out, "%-26s %8s %10s %9s %10s %9s %7s\n", "shape/dtype/M/T",
                             "ffn_GB/s", "before_GB/s", "%before", "after_GB/s", "%after", "read%");
                header = true;
            }
            char read[16] = "-";
            if (row.ffn.reads > 0 && row.ffn.read_doubtful)
                std::snprintf(read, sizeof read, "(?)");
            else if (row.ffn.reads > 0)
                std::snprintf(read, sizeof read, "%.1f", row.ffn.read_pct / row.ffn.reads);
            if (after == dram_after.end() || before <= 0) {
                std::fprintf(out, "%-26s %8.1f %10.1f %9.1f %10s %9s %7s\n", key->c_str(), gbs,
                             before, before > 0 ? 100 * gbs / before : 0.0, "-", "-", read);
            } else {
                std::fprintf(out, "%-26s %8.1f %10.1f %9.1f %10.1f %9.1f %7s\n", key->c_str(), gbs,
                             before, 100 * gbs / before, after->second, 100 * gbs / after->second,
                             read);
            }
        }
    }

private:
    struct Acc {
        double ns = 0, roof = 0, gbs = 0, read_pct = 0;
        int n = 0, reads = 0;
        bool read_doubtful = false;  // a read_noisy row: no figure to quote
    };
    struct Row {
        int order = -1;
        Acc ffn, base;
    };

    void collect(const Run& r) {
        if (r.run_type != Run::RT_Iteration || r.error_occurred) return;
        const std::string name = r.benchmark_name();
        const bool ffn = name.rfind("ffn/", 0) == 0;
        const std::string key = name.substr(ffn ? 4 : 9);
        auto it = r.counters.find("ns_per_call");
        if (it == r.counters.end()) return;
        Row& row = rows_[key];
        if (row.order < 0) row.order = int(rows_.size());
        Acc& acc = ffn ? row.ffn : row.base;
        acc.ns += it->second.value;
        if (auto rp = r.counters.find("roofline_pct"); rp != r.counters.end())
            acc.roof += rp->second.value;
        if (auto g = r.counters.find("GBs"); g != r.counters.end()) acc.gbs += g->second.value;
        if (auto rd = r.counters.find("read_pct"); rd != r.counters.end()) {
            acc.read_pct += rd->second.value;
            acc.reads += 1;
            if (auto rn = r.counters.find("read_noisy"); rn != r.counters.end())
                acc.read_doubtful = acc.read_doubtful || rn->second.value > 0;
        }
        acc.n += 1;
    }

    benchmark::BenchmarkReporter* inner_;  // not owned (may be library-static)
    bool collect_;
    std::map<std::string, Row> rows_;
};

// The reporter --benchmark_out_format asks for (json by default).
benchmark::BenchmarkReporter* make_file_reporter(const std::string& format) {
    if (format == "console")
        return new benchmark::ConsoleReporter(benchmark::ConsoleReporter::OO_None);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    if (format == "csv") return new benchmark::CSVReporter;
#pragma GCC diagnostic pop
    return new benchmark::JSONReporter;
}

// Value of --name=value or --name value in argv, "" if absent.
std::string flag_value(const std::vector<char*>& args, const char* name) {
    const std::size_t n = std::strlen(name);
    std::string value;
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (std::strncmp(args[i], name, n) != 0) continue;
        if (args[i][n] == '=') value = args[i] + n + 1;
    }
    return value;
}

// --help: this binary's own flags, then Google Benchmark's.
void print_help() {
    std::printf(
        "swiglu_bench: benchmarks of the swiglu SwiGLU block (Google Benchmark)\n"
        "\n"
        "  swiglu_bench [--quick] [--dtype D] [--benchmark_* flags]   the benchmarks\n"
        "  swiglu_bench --profile [--quick] [--dtype D]               the profile table\n"
        "  swiglu_bench --ridge [--quick] [--dtype D]                 the ridge table\n"
        "  swiglu_bench --probe                                       only the machine probe\n"
        "\n"
        "  --profile   glass, cyber, llama7b at 1, 16 and 512 tokens on all cores, ffn and\n"
        "              oneDNN baseline, one table\n"
        "  --ridge     every shape at 4, 8, 16 and 32 tokens on all cores, ffn alone, beside\n"
        "              its limit: weight bytes / the read rate where they live, or FLOPs /\n"
        "              the dtype's peak, whichever is longer, and the share of it reached\n"
        "  --quick     skip llama7b (541 MB of f32 weights)\n"
        "  --dtype D   block dtypes to run: f32, bf16, int8, q8_0, q4_0, q4_k, q5_k, q6_k,\n"
        "              q4_k_m (gate, up q4_k; down q6_k) or all (default all); a\n"
        "              comma-separated list works too, e.g. --dtype f32,int8\n"
        "  --panels=on|off  whether f32 and bf16 may run on the panel kernels (CPUs\n"
        "              without AVX-512: f32; without a bf16 matmul: bf16; default on;\n"
        "              off: oneDNN's f32 kernels, on bf16-rounded weights for bf16)\n"
        "  --s8-rows=auto|N  the tallest int8 row tiles on our s8 kernel (CPUs with\n"
        "              AVX512-VNNI; default auto; 0: oneDNN's kernels only), to\n"
        "              measure it against oneDNN's\n"
        "  --bf16-rows=auto|0|1  whether one-row bf16 tiles run on our kernel (CPUs\n"
        "              with AVX-512; default auto; 0: oneDNN's kernels only)\n"
        "  --grouped-prefill=auto|never|f32|bf16  which path q8_0 / q4_0 take for\n"
        "              64-row tiles (default auto), to measure the crossover\n"
        "  --probe     print the machine probe (peak f32 FMA, bf16 vdpbf16ps and int8\n"
        "              dot-product rates, DRAM read bandwidth; 1, 2 and all threads) and exit\n"
        "\n"
        "Benchmarks: ffn/<shape>/<dtype>/M:<tokens>/T:<threads> and baseline/..., shapes\n"
        "glass, cyber, llama7b; dtypes f32, bf16, int8, q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m;\n"
        "tokens 1, 4, 8, 16, 32, 64, 128, 512 (K-quants: 1, 4, 16, 128, 512); "
        "threads 1, 2 (and\nall, if more). Counters: ns_per_call, GFLOPs, GBs (weight bytes of "
        "the dtype as GGUF\nstores it: 4, 2, 1, 34/32, 18/32, 144/256, 176/256, 210/256 per "
        "weight), roofline_pct\n(vs the dtype's peak and the read rate of the level holding the "
        "weights; block\nformats: the int8 peak), pct_of_bf16_peak (int8 and block-format "
        "rows).\n"
        "moe/<shape>/<dtype>/M:<tokens>/T:<threads>: swiglu::Experts, shapes qwen3moe (d 2048,\n"
        "f 768, 128 experts, top 8), olmoe (2048, 1024, 64, 8), mixtral (4096, 14336, 8, 2);\n"
        "every dtype but f32 and int8; tokens 1, 4, 16, 128, 512; routing drawn at random,\n"
        "16 draws cycled call by call. Counters: ns_per_call, GBs and bytes_per_second (the\n"
        "distinct chosen experts' bytes), dram_pct (vs the DRAM probe), GFLOPs (6 M k d f),\n"
        "pct_of_peak. Not with --quick.\n"
        "Select rows with --benchmark_filter=, e.g. 'glass/bf16/' or 'llama7b/.*/M:1/'.\n"
        "\n"
        "Google Benchmark flags:\n");
    benchmark::PrintDefaultHelp();
}

// Parses --dtype's value: a name of all_dtypes(), all, or a comma-separated
// list of them.
bool parse_dtypes(const std::string& value, std::vector<swiglu_bench::BenchDtype>& out) {
    std::vector<bool> picked(swiglu_bench::all_dtypes().size(), false);
    std::size_t at = 0;
    while (at <= value.size()) {
        const std::size_t comma = std::min(value.find(',', at), value.size());
        const std::string item = value.substr(at, comma - at);
        bool known = false;
        for (std::size_t i = 0; i < picked.size(); ++i)
            if (item == "all" || item == swiglu_bench::all_dtypes()[i].name)
                known = picked[i] = true;
        if (!known) return false;
        at = comma + 1;
    }
    // Always in all_dtypes()' order: f32, bf16, int8, ..., q4_k_m.
    out.clear();
    for (std::size_t i = 0; i < picked.size(); ++i)
        if (picked[i]) out.push_back(swiglu_bench::all_dtypes()[i]);
    return !out.empty();
}

bool flag_is_set(const char* arg, const char* name) {
    const std::size_t n = std::strlen(name);
    if (std::strncmp(arg, name, n) != 0) return false;
    if (arg[n] == '\0') return true;
    if (arg[n] != '=') return false;
    const char* v = arg + n + 1;
    return !(std::strcmp(v, "false") == 0 || std::strcmp(v, "0") == 0 || std::strcmp(v, "no") == 0);
}

}  // namespace

int main(int argc, char** argv) {
    bool profile = false, ridge = false, quick = false, probe_only = false, listing = false;
    std::vector<swiglu_bench::BenchDtype> dtypes = swiglu_bench::all_dtypes();
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
        if (i > 0 &&
            (std::strcmp(argv[i], "--dtype") == 0 || std::strncmp(argv[i], "--dtype=", 8) == 0)) {
            const bool separate = argv[i][7] == '\0';
            if (separate && i + 1 >= argc) {
                std::fprintf(
                    stderr,
                    "swiglu_bench: --dtype needs a value: f32, bf16, int8, q8_0, q4_0, q4_k, "
                    "q5_k, q6_k, q4_k_m or all\n");
                return 1;
            }
            const std::string value = separate ? argv[++i] : argv[i] + 8;
            if (!parse_dtypes(value, dtypes)) {
                std::fprintf(
                    stderr,
                    "swiglu_bench: --dtype %s: expected f32, bf16, int8, q8_0, q4_0, q4_k, "
                    "q5_k, q6_k, q4_k_m, all or a comma-separated list of them\n",
                    value.c_str());
                return 1;
            }
        } else if (i > 0 && std::strncmp(argv[i], "--panels=", 9) == 0) {
            // Whether f32 and bf16 may run on the panel kernels where oneDNN
            // serves them poorly (core/precision.hpp), to measure them
            // against oneDNN's f32 kernels.
            const std::string v = argv[i] + 9;
            if (v != "on" && v != "off") {
                std::fprintf(stderr, "swiglu_bench: --panels=%s: expected on or off\n", v.c_str());
                return 1;
            }
            swiglu_bench::build_policy().panels = v == "on";
        } else if (i > 0 && std::strncmp(argv[i], "--grouped-prefill=", 18) == 0) {
            // Which path q8_0 / q4_0 take for 64-row tiles: for measuring
            // the crossover (swiglu::GroupedPrefill).
            const std::string v = argv[i] + 18;
            using GP = swiglu::GroupedPrefill;
            if (v == "auto" || v == "never" || v == "f32" || v == "bf16") {
                swiglu_bench::build_policy().grouped_prefill = v == "auto"    ? GP::automatic
                                                               : v == "never" ? GP::never
                                                               : v == "f32"   ? GP::f32
                                                                              : GP::bf16;
            } else {
                std::fprintf(stderr,
                             "swiglu_bench: --grouped-prefill=%s: expected auto, never, f32 or "
                             "bf16\n",
                             v.c_str());
                return 1;
            }
        } else if (i > 0 && std::strncmp(argv[i], "--s8-rows=", 10) == 0) {
            // The tallest int8 row tiles on our s8 kernel: for measuring it
            // against oneDNN's (swiglu::BuildPolicy::int8_own_rows).
            const std::string v = argv[i] + 10;
            char* end = nullptr;
            const long rows = v == "auto" ? -1 : std::strtol(v.c_str(), &end, 10);
            if (v != "auto" && (v.empty() || *end != '\0' || rows < 0 || rows > 64)) {
                std::fprintf(stderr, "swiglu_bench: --s8-rows=%s: expected auto or 0..64\n",
                             v.c_str());
                return 1;
            }
            swiglu_bench::build_policy().int8_own_rows = v == "auto" ? -1 : rows;
        } else if (i > 0 && std::strncmp(argv[i], "--bf16-rows=", 12) == 0) {
            // One-row bf16 tiles on our kernel or oneDNN's
            // (swiglu::BuildPolicy::bf16_own_rows).
            const std::string v = argv[i] + 12;
            if (v != "auto" && v != "0" && v != "1") {
                std::fprintf(stderr, "swiglu_bench: --bf16-rows=%s: expected auto, 0 or 1\n",
                             v.c_str());
                return 1;
            }
            swiglu_bench::build_policy().bf16_own_rows = v == "auto" ? -1 : v == "0" ? 0 : 1;
        } else if (i > 0 && std::strcmp(argv[i], "--profile") == 0) {
            profile = true;
        } else if (i > 0 && std::strcmp(argv[i], "--ridge") == 0) {
            ridge = true;
        } else if (i > 0 && std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (i > 0 && std::strcmp(argv[i], "--probe") == 0) {
            probe_only = true;
        } else {
            if (i > 0 && flag_is_set(argv[i], "--benchmark_list_tests")) listing = true;
            args.push_back(argv[i]);
        }
    }
    const std::string out_file = flag_value(args, "--benchmark_out");
    std::string out_format = flag_value(args, "--benchmark_out_format");
    int args_n = int(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&args_n, args.data(), print_help);
    if (benchmark::ReportUnrecognizedArguments(args_n, args.data())) return 1;

    const swiglu_bench::LibraryInfo lib = swiglu_bench::library_info();
    if (!listing) {
        const auto& probe = swiglu_bench::run_machine_probe(lib.threads_default);
        swiglu_bench::add_probe_context(probe);
        if (lib.error.empty()) {
            benchmark::AddCustomContext("swiglu_matmul", lib.matmul);
            benchmark::AddCustomContext("swiglu_activation", lib.activation);
        } else {
            benchmark::AddCustomContext("swiglu_error", lib.error);
        }
        // bf16 and int8: what runs underneath, or why the dtype can't run.
        for (swiglu::Dtype d : swiglu::kDtypes) {
            if (d == swiglu::Dtype::f32) continue;  // reported above
            const std::string name = swiglu::dtype_name(d);
            if (lib.dtype_error[int(d)].empty())
                benchmark::AddCustomContext("swiglu_matmul_" + name, lib.dtype_matmul[int(d)]);
            else
                benchmark::AddCustomContext("swiglu_error_" + name, lib.dtype_error[int(d)]);
        }
    }
    if (probe_only) {
        swiglu_bench::print_probe(swiglu_bench::machine());
        return 0;
    }
    if (profile || ridge) {
        int rc = profile ? swiglu_bench::run_profile(quick, dtypes) : 0;
        if (rc == 0 && ridge) {
            if (profile) std::printf("\n");
            rc = swiglu_bench::run_ridge(quick, dtypes);
        }
        benchmark::Shutdown();
        return rc;
    }

    swiglu_bench::register_ffn_benchmarks(
        quick, swiglu_bench::bench_thread_counts(lib.threads_default), dtypes);
    swiglu_bench::register_moe_benchmarks(
        quick, swiglu_bench::bench_thread_counts(lib.threads_default), dtypes);
    if (std::find(dtypes.begin(), dtypes.end(), swiglu_bench::BenchDtype::of(swiglu::Dtype::f32)) !=
        dtypes.end())
        swiglu_bench::register_backward_benchmarks(
            quick, swiglu_bench::bench_thread_counts(lib.threads_default));
    ForwardingReporter display(benchmark::CreateDefaultDisplayReporter(), true);
    if (out_file.empty()) {
        benchmark::RunSpecifiedBenchmarks(&display);
    } else {
        std::unique_ptr<benchmark::BenchmarkReporter> file_inner(make_file_reporter(out_format));
        ForwardingReporter file(file_inner.get(), false);
        benchmark::RunSpecifiedBenchmarks(&display, &file);
    }
    display.print_summary(display.console() ? stdout : stderr, swiglu_bench::probe_dram_again());
    benchmark::Shutdown();
    return 0;
}
