// Peak resident memory of the block at a few token counts: what a forward
// call adds on top of the packed weights and the caller's x and y. Each
// measurement runs in a child process of its own (forked before anything
// touches oneDNN or OpenMP), so one cannot inherit another's memory.
//
//   swiglu_peak_rss                    # llama7b (d = 4096, f = 11008), 1 and 4096 tokens
//   swiglu_peak_rss --d 1024 --f 2816 --tokens 1,64,4096 [--threads N] [--dtype bf16]
//   swiglu_peak_rss --weights model.safetensors [--layer N] [--dtype bf16]
//
// With --weights it measures loading instead: the peak RSS while a block is
// built from the checkpoint, once through an f32 copy (load_weights, then
// Ffn from its views: what loading cost before) and once packed straight
// from the file (load_ffn), each in a child process of its own.
//
// Per token count it prints: RSS once the Ffn is built (the caller's weights
// already freed), x and y, RSS just before the call, the peak during the
// first forward call (it also makes the call's scratch) and the growth
// (peak - before), and the process's lifetime peak (construction included:
// the caller's f32 weights and the packed copy exist together then).
// The peak during the call is read from /proc/self/status (VmHWM) after
// resetting it with /proc/self/clear_refs (Linux >= 4.0).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "process_memory.hpp"

namespace {

using swiglu_memory::reset_peak;
using swiglu_memory::status_kib;

double mib(long kib) { return kib / 1024.0; }

// Values in [-scale, scale), cheap to make (xorshift).
void fill(std::vector<float>& v, std::uint64_t seed, float scale) {
    std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (float& x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x = scale * (static_cast<float>(s >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f);
    }
}

struct Args {
    std::int64_t d = 4096, f = 11008;
    std::string weights;  // a checkpoint: measure loading it
    std::int64_t layer = -1;
    std::vector<std::int64_t> tokens = {1, 4096};
    int threads = 0;
    swiglu::Dtype dtype = swiglu::Dtype::f32;
};

// The packed weights' bytes per weight (GGUF's blocks with their scales),
// for the figure printed beside the measured ones.
double bytes_per_weight(swiglu::Dtype dtype) {
    switch (dtype) {
        case swiglu::Dtype::f32: return 4;
        case swiglu::Dtype::bf16: return 2;
        case swiglu::Dtype::int8: return 1;
        case swiglu::Dtype::q8_0: return 34.0 / 32;
        case swiglu::Dtype::q4_0: return 18.0 / 32;
        case swiglu::Dtype::q4_k: return 144.0 / 256;
        case swiglu::Dtype::q5_k: return 176.0 / 256;
        case swiglu::Dtype::q6_k: return 210.0 / 256;
    }
    return 4;
}

[[noreturn]] void usage(const char* why) {
    std::string names;
    for (swiglu::Dtype t : swiglu::kDtypes)
        names += std::string(names.empty() ? "" : "|") + swiglu::dtype_name(t);
    std::fprintf(stderr,
                 "swiglu_peak_rss: %s\nusage: swiglu_peak_rss [--d D] [--f F] [--tokens N,N,...] "
                 "[--threads N] [--dtype %s] [--weights FILE [--layer N]]\n",
                 why, names.c_str());
    std::exit(2);
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string opt = argv[i];
        if (i + 1 >= argc) usage(("missing value after " + opt).c_str());
        const std::string value = argv[++i];
        if (opt == "--d") {
            a.d = std::stoll(value);
        } else if (opt == "--f") {
            a.f = std::stoll(value);
        } else if (opt == "--threads") {
            a.threads = std::stoi(value);
        } else if (opt == "--tokens") {
            a.tokens.clear();
            std::stringstream ss(value);
            for (std::string t; std::getline(ss, t, ',');) a.tokens.push_back(std::stoll(t));
        } else if (opt == "--weights") {
            a.weights = value;
        } else if (opt == "--layer") {
            a.layer = std::stoll(value);
        } else if (opt == "--dtype") {
            bool known = false;
            for (swiglu::Dtype t : swiglu::kDtypes)
                if (value == swiglu::dtype_name(t)) a.dtype = t, known = true;
            if (!known) usage(("unknown dtype " + value).c_str());
        } else {
            usage(("unknown option " + opt).c_str());
        }
    }
    if (a.d < 1 || a.f < 1 || a.tokens.empty()) usage("d, f and the token counts must be >= 1");
    return a;
}

// One measurement, in the child.
int measure(const Args& a, std::int64_t tokens) {
    const std::size_t df = static_cast<std::size_t>(a.d * a.f);
    std::unique_ptr<swiglu::Ffn> ffn;
    {
        std::vector<float> gate(df), up(df), down(df);
        fill(gate, 1, 1.0f / 64);
        fill(up, 2, 1.0f / 64);
        fill(down, 3, 1.0f / 64);
        ffn = std::make_unique<swiglu::Ffn>(swiglu::WeightView::out_in(gate.data(), a.f, a.d),
                                            swiglu::WeightView::out_in(up.data(), a.f, a.d),
                                            swiglu::WeightView::out_in(down.data(), a.d, a.f),
                                            swiglu::Options{a.threads, a.dtype});
    }  // the caller's weights are freed here
    const long built = status_kib("VmRSS");
    std::vector<float> x(static_cast<std::size_t>(tokens * a.d)), y(x.size(), 0.0f);
    fill(x, 4, 1.0f);
    const long build_peak = status_kib("VmHWM");  // construction included
    if (!reset_peak()) {
        std::fprintf(stderr,
                     "swiglu_peak_rss: cannot reset the peak RSS (/proc/self/clear_refs)\n");
        return 1;
    }
    const long before = status_kib("VmRSS");
    const auto start = std::chrono::steady_clock::now();
    ffn->forward(x.data(), y.data(), tokens);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const long peak = status_kib("VmHWM");
    const double io_mib = 2.0 * static_cast<double>(x.size()) * sizeof(float) / (1 << 20);
    std::printf("%8lld %10.1f %10.1f %10.1f %10.1f %10.1f %12.1f %8.2f\n",
                static_cast<long long>(tokens), mib(built), io_mib, mib(before), mib(peak),
                mib(peak - before), mib(std::max(build_peak, peak)), seconds);
    std::fflush(stdout);
    return 0;
}

// Loading one block from a.weights, in the child: through an f32 copy of
// the weights or straight from the file.
int measure_load(const Args& a, bool direct) {
    if (!reset_peak()) {
        std::fprintf(stderr, "swiglu_peak_rss: cannot reset the peak RSS\n");
        return 1;
    }
    const long start_rss = status_kib("VmRSS");
    const swiglu::WeightSelector selector{a.layer, "", -1};
    const swiglu::Options options{a.threads, a.dtype};
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<swiglu::Ffn> ffn;
    if (direct) {
        ffn = std::make_unique<swiglu::Ffn>(swiglu::load_ffn(a.weights, selector, options));
    } else {
        const swiglu::LoadedWeights w = swiglu::load_weights(a.weights, selector);
        ffn = std::make_unique<swiglu::Ffn>(w.gate_view(), w.up_view(), w.down_view(), options);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-10s %12.1f %12.1f %12.1f %8.2f\n", direct ? "direct" : "f32 copy",
                mib(start_rss), mib(status_kib("VmHWM")), mib(status_kib("VmRSS")), seconds);
    std::fflush(stdout);
    return 0;
}

// Runs `f` in a child process; false if it failed.
template <class F>
bool in_child(F f) {
    const pid_t pid = ::fork();
    if (pid < 0) {
        std::perror("fork");
        return false;
    }
    if (pid == 0) {
        int rc = 1;
        try {
            rc = f();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "swiglu_peak_rss: %s\n", e.what());
        }
        std::_Exit(rc);
    }
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0) {}
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

}  // namespace

int main(int argc, char** argv) {
    const Args a = parse(argc, argv);
    if (!a.weights.empty()) {
        std::printf("swiglu %s, loading %s as %s: RSS in MiB (peak: while the block is built)\n",
                    swiglu::version(), a.weights.c_str(), swiglu::dtype_name(a.dtype));
        std::printf("%-10s %12s %12s %12s %8s\n", "load", "before", "peak", "after", "seconds");
        std::fflush(stdout);
        bool ok = in_child([&] { return measure_load(a, false); });
        ok = in_child([&] { return measure_load(a, true); }) && ok;
        return ok ? 0 : 1;
    }
    const double packed_mib = 3.0 * static_cast<double>(a.d) * static_cast<double>(a.f) *
                              bytes_per_weight(a.dtype) / (1 << 20);
    std::printf(
        "swiglu %s, d = %lld, f = %lld, %s, threads %d (0 = all cores): packed weights %.1f MiB\n",
        swiglu::version(), static_cast<long long>(a.d), static_cast<long long>(a.f),
        swiglu::dtype_name(a.dtype), a.threads, packed_mib);
    std::printf("%8s %10s %10s %10s %10s %10s %12s %8s\n", "tokens", "built MiB", "x+y MiB",
                "before", "peak call", "growth", "life peak", "call s");
    std::fflush(stdout);
    int status = 0;
    for (std::int64_t tokens : a.tokens)
        if (!in_child([&] { return measure(a, tokens); })) status = 1;
    return status;
}
