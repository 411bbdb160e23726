#include "info_command.hpp"

#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/moe_checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "help_text.hpp"
#include "io/safetensors.hpp"

namespace swiglu::cli {
namespace {

// The probe block when no checkpoint is given: small enough to build at once,
// large enough that the library picks its ordinary kernels.
constexpr std::int64_t kProbeD = 64, kProbeF = 128;

void line(const char* key, const std::string& value) {
    std::cout << key << std::string(12 - std::char_traits<char>::length(key), ' ') << value << '\n';
}

// "q4_k", or "q4_k (gate, up), q6_k (down)" where down has its own.
std::string dtypes_text(Dtype gate_up, Dtype down) {
    if (down == gate_up) return dtype_name(gate_up);
    return std::string(dtype_name(gate_up)) + " (gate, up), " + dtype_name(down) + " (down)";
}

void print_implementation(const Implementation& impl, const std::string& block) {
    line("threads:", std::to_string(impl.threads));
    line("activation:", impl.activation + "  (xsimd kernel of SiLU(gate) * up)");
    // Each phase's format: a block may run down in another (Q4_K_M's Q6_K).
    line("dtype:", dtypes_text(impl.dtype, impl.down_dtype));
    // oneDNN's implementation names, or our own kernels' ("f32 panels:avx2_fma").
    line("matmul:", impl.matmul + "  (" + block + ")");
}

// What each precision runs on this CPU, from a small zero block: native
// kernels, an emulation (and its expected speed), or a refusal.
void print_dtype_support(const Options& options) {
    constexpr std::int64_t kD = 64, kF = 128;
    const std::vector<float> zeros(kD * kF, 0.0f);
    for (Dtype dtype : kDtypes) {
        const std::string key = std::string(dtype_name(dtype)) + ":";
        try {
            Options probe_options;
            probe_options.threads = options.threads;
            probe_options.dtype = dtype;
            const Ffn probe(WeightView::out_in(zeros.data(), kF, kD),
                            WeightView::out_in(zeros.data(), kF, kD),
                            WeightView::out_in(zeros.data(), kD, kF), probe_options);
            line(key.c_str(), probe.implementation().matmul);
        } catch (const Error& e) {
            line(key.c_str(), std::string("not available: ") + e.what());
        }
    }
}

// Every block the checkpoint holds, a line each: prefix (quoted: the names
// come from the file), scheme, layer and expert, then d, f and dtype or why
// it would not load.
void print_blocks(const std::vector<BlockInfo>& blocks) {
    line("blocks:", std::to_string(blocks.size()) + " found");
    for (const BlockInfo& b : blocks) {
        std::string s = "  " + detail::quote_name(b.prefix) + "  " + b.scheme;
        if (b.layer >= 0) s += "  layer " + std::to_string(b.layer);
        if (b.expert >= 0) s += "  expert " + std::to_string(b.expert);
        if (b.problem.empty())
            s +=
                "  d " + std::to_string(b.d) + "  f " + std::to_string(b.f) + "  " + b.source_dtype;
        else
            s += "  not loadable: " + b.problem;
        std::cout << s << '\n';
        if (!b.import_note.empty()) std::cout << "      " << b.import_note << '\n';
    }
}

// The block: its tensors, each weight's stored format ("stored as" names
// each where they differ) and what they run in (`options` as the loader
// resolves them: --dtype stored keeps the file's formats where it can).
void print_checkpoint(const BlockInfo& b, const Options& options) {
    const Options run = stored_options(b, options);
    line("block:", detail::quote_name(b.prefix));
    line("scheme:", b.scheme);
    line("gate:", b.gate_name);
    line("up:", b.up_name);
    line("down:", b.down_name);
    line("stored as:", b.source_dtype);
    line("runs as:", dtypes_text(run.dtype, run.down_dtype.value_or(run.dtype)) +
                         (options.keep_stored ? "  (--dtype stored)" : ""));
    line("d:", std::to_string(b.d));
    line("f:", std::to_string(b.f));
    line("parameters:", std::to_string(parameter_count(b.d, b.f)));
}

// "sigmoid + bias, top-8 of 256 from the 4 best of 8 groups (each scored by
// its two best experts), normalized, scaled by 2.5".
std::string rule_text(const RouterRule& r, std::int64_t experts, bool bias) {
    std::string s = r.score == RouterScore::softmax ? "softmax" : "sigmoid";
    if (bias) s += " + bias (choice only)";
    s += ", top-" + std::to_string(r.top_k) + " of " + std::to_string(experts);
    if (r.groups > 1)
        s += " from the " + std::to_string(r.top_groups) + " best of " + std::to_string(r.groups) +
             " groups (each scored by its " +
             (r.group_score == GroupScore::max ? "best expert" : "two best experts") + ")";
    s += r.normalize ? ", normalized" : ", not normalized";
    if (r.scaling != 1.0f) {
        std::ostringstream scale;
        scale << r.scaling;
        s += ", scaled by " + scale.str();
    }
    return s;
}

// A Mixture-of-Experts layer: where its rule comes from, the router, the
// experts (expert 0's names stand for all), the shared block, and what the
// experts run as under `options`.
void print_moe(const MoeInfo& m, const Options& options) {
    const BlockInfo& e = m.expert;
    line("layer:", std::to_string(m.layer) + "  (Mixture-of-Experts: router, " +
                       std::to_string(m.rule.top_k) + " experts per token" +
                       (m.has_shared ? ", shared block)" : ")"));
    line("model:", m.model + "  (rule from " + m.config + ")");
    line("router:", detail::quote_name(m.router_name) + "  " + m.router_format + "  [E, d] = [" +
                        std::to_string(m.experts) + ", " + std::to_string(e.d) + "]");
    line("routing:", rule_text(m.rule, m.experts, !m.bias_name.empty()));
    if (!m.bias_name.empty()) line("bias:", detail::quote_name(m.bias_name));
    line("experts:", std::to_string(m.experts) + " x " + e.scheme + "  " +
                         detail::quote_name(m.experts_pattern) + "  d " + std::to_string(e.d) +
                         "  f " + std::to_string(e.f));
    line("gate:", e.gate_name);
    line("up:", e.up_name);
    line("down:", e.down_name);
    line("stored as:", m.experts_dtype);
    const Options run = stored_options(e, options);
    line("runs as:", dtypes_text(run.dtype, run.down_dtype.value_or(run.dtype)) +
                         (options.keep_stored ? "  (--dtype stored)" : ""));
    if (!e.import_note.empty()) line("", e.import_note + " (in each expert)");
    if (!m.has_shared) {
        line("shared:", "none");
    } else {
        const BlockInfo& s = m.shared;
        const Options shared_run = stored_options(s, options);
        line("shared:",
             detail::quote_name(s.scheme == "gguf-shared-expert" ? s.prefix + "ffn_*_shexp."
                                                                 : s.prefix) +
                 "  " + s.scheme + "  d " + std::to_string(s.d) + "  f " + std::to_string(s.f) +
                 "  " + s.source_dtype + "  runs as " +
                 dtypes_text(shared_run.dtype, shared_run.down_dtype.value_or(shared_run.dtype)) +
                 (m.shared_experts > 1
                      ? "  (" + std::to_string(m.shared_experts) + " shared experts)"
                      : ""));
        line("", m.shared_gate_name.empty() ? std::string("every token, unscaled")
                                            : "every token, scaled by sigmoid(x . " +
                                                  detail::quote_name(m.shared_gate_name) + ")");
    }
    std::int64_t parameters = m.experts * (e.d + parameter_count(e.d, e.f));
    if (m.has_shared)
        parameters +=
            parameter_count(m.shared.d, m.shared.f) + (m.shared_gate_name.empty() ? 0 : m.shared.d);
    line("parameters:", std::to_string(parameters) + "  (router, experts" +
                            (m.has_shared ? ", shared block)" : ")"));
}

}  // namespace

CLI::App* add_info_command(CLI::App& app, InfoArgs& args) {
    CLI::App* info = app.add_subcommand("info", help::info_description);
    info->footer(help::info_footer);
    add_weights_options(*info, args.weights, /*required=*/false);
    add_threads_option(*info, args.threads);
    add_dtype_option(*info, args.dtype);
    return info;
}

void info_command(const InfoArgs& args) {
    const Options options = block_options(args.weights.path, args.threads, args.dtype);
    // A checkpoint that fails to load fails the command before anything is
    // printed: no half report on stdout.
    const bool with_weights = !args.weights.path.empty();
    const std::vector<BlockInfo> blocks =
        with_weights ? list_checkpoint(args.weights) : std::vector<BlockInfo>{};
    // A Mixture-of-Experts layer chosen whole (as `run` runs it): its router,
    // rule and experts. Otherwise several blocks and none chosen: the list
    // alone (the kernels depend on the block); else the block that loads,
    // or the reason it doesn't.
    const std::int64_t moe_layer = with_weights ? moe_layer_of(args.weights).value_or(-1) : -1;
    std::set<std::int64_t> moe;  // the layers with routed experts
    for (const BlockInfo& b : blocks)
        if (b.layer >= 0 && b.expert >= 0) moe.insert(b.layer);
    const MoeInfo moe_info =
        moe_layer >= 0 ? describe_checkpoint_moe(args.weights, moe_layer) : MoeInfo{};
    const bool one_block =
        with_weights && moe_layer < 0 && (args.weights.selects() || blocks.size() <= 1);
    const BlockInfo block = one_block ? describe_checkpoint(args.weights) : BlockInfo{};

    line("swiglu:", version());
    line("cpu:", cpu_features());
    if (!with_weights) {
        const std::vector<float> zeros(kProbeD * kProbeF, 0.0f);
        // No file: --dtype stored has nothing to keep, and runs f32.
        Options probe_options = options;
        probe_options.keep_stored = false;
        const Ffn probe(WeightView::out_in(zeros.data(), kProbeF, kProbeD),
                        WeightView::out_in(zeros.data(), kProbeF, kProbeD),
                        WeightView::out_in(zeros.data(), kProbeD, kProbeF), probe_options);
        print_implementation(probe.implementation(), "probe block d = 64, f = 128; see --weights");
        std::cout << "matmul per --dtype on this CPU:\n";
        print_dtype_support(options);
        return;
    }
    line("weights:", args.weights.path);
    print_blocks(blocks);
    if (!moe.empty()) {
        std::string layers;
        for (std::int64_t l : moe) layers += (layers.empty() ? "" : ", ") + std::to_string(l);
        line("moe layers:", layers + "  (--layer N runs one whole; --expert E one expert)");
    }
    if (moe_layer >= 0) {
        print_moe(moe_info, options);
        std::cout.flush();
        const MoeLayer layer = load_checkpoint_moe(args.weights, moe_layer, options);
        print_implementation(layer.experts().implementation(), "for the experts");
        return;
    }
    if (!one_block) {
        std::cout << "choose one with --layer N, --expert E or --block P to see its kernels\n";
        return;
    }
    // The checkpoint is printed before the block is built, so that a block
    // the library rejects (e.g. a bad --threads) still shows what the file holds.
    print_checkpoint(block, options);
    std::cout.flush();
    // Packed straight from the file, as `run` packs it (stored blocks unchanged).
    const Ffn ffn = load_checkpoint_block(args.weights, options);
    print_implementation(ffn.implementation(), "for this block");
}

}  // namespace swiglu::cli
