#include "info_command.hpp"

#include <iostream>
#include <vector>

#include <swiglu/checkpoint.hpp>
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

void print_implementation(const Ffn& ffn, const std::string& block) {
    const Implementation impl = ffn.implementation();
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
    // Several blocks and none chosen: the list alone (the kernels depend on
    // the block); otherwise the block that loads, or the reason it doesn't.
    const bool one_block = with_weights && (args.weights.selects() || blocks.size() <= 1);
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
        print_implementation(probe, "probe block d = 64, f = 128; see --weights");
        std::cout << "matmul per --dtype on this CPU:\n";
        print_dtype_support(options);
        return;
    }
    line("weights:", args.weights.path);
    print_blocks(blocks);
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
    print_implementation(ffn, "for this block");
}

}  // namespace swiglu::cli
