#include "weights_options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <string>

#include "common/messages.hpp"
#include "formats/format_table.hpp"
#include "io/checkpoint_files.hpp"

namespace swiglu::cli {
namespace {

// CLI11's NonNegativeNumber reports "not in range [0 - 1.79769e+308]"; this
// says what the number means instead.
CLI::Validator non_negative(const std::string& meaning) {
    return CLI::Validator(
        [meaning](std::string& text) -> std::string {
            errno = 0;
            char* end = nullptr;
            const long long value = std::strtoll(text.c_str(), &end, 10);
            if (text.empty() || *end != '\0' || errno == ERANGE)
                return "'" + text + "' is not an integer";
            if (value < 0) return "must be " + meaning + " (got " + text + ")";
            return "";
        },
        "");  // no type suffix in --help: the option's text says what it takes
}

constexpr const char* kStored = "stored";

bool is_stored(const std::string& name) {
    if (name.size() != 6) return false;
    for (std::size_t i = 0; i < 6; ++i)
        if (std::tolower(static_cast<unsigned char>(name[i])) != kStored[i]) return false;
    return true;
}

// Rethrows the Error in flight, with the checkpoint's path put in front
// unless the message already names it.
[[noreturn]] void rethrow_naming(const Error& e, const std::string& path) {
    const std::string message = e.what();
    if (message.find(path) != std::string::npos) throw;
    throw Error(e.status(), "weights " + path + ": " + message);
}

}  // namespace

LoadedWeights load_checkpoint(const WeightsArgs& args) {
    try {
        return load_weights(args.path, args.selector());
    } catch (const Error& e) {
        rethrow_naming(e, args.path);
    }
}

Ffn load_checkpoint_block(const WeightsArgs& args, const Options& options) {
    try {
        return load_ffn(args.path, args.selector(), options);
    } catch (const Error& e) {
        if (std::string(e.what()).rfind("Ffn: ", 0) == 0) throw;
        rethrow_naming(e, args.path);
    }
}

BlockInfo describe_checkpoint(const WeightsArgs& args) {
    try {
        return describe_block(args.path, args.selector());
    } catch (const Error& e) {
        rethrow_naming(e, args.path);
    }
}

std::vector<BlockInfo> list_checkpoint(const WeightsArgs& args) {
    try {
        return list_blocks(args.path);
    } catch (const Error& e) {
        rethrow_naming(e, args.path);
    }
}

std::optional<std::int64_t> moe_layer_of(const WeightsArgs& args) {
    if (args.expert >= 0 || !args.prefix.empty()) return std::nullopt;
    try {
        const std::vector<std::int64_t> moe = moe_layers(args.path);
        if (args.layer >= 0) {
            if (std::binary_search(moe.begin(), moe.end(), args.layer)) return args.layer;
            return std::nullopt;
        }
        if (moe.size() != 1) return std::nullopt;
        // No selector: the file must be that one layer (a Mixtral layer's
        // experts, a Qwen2-MoE layer's experts and shared expert).
        for (const BlockInfo& b : list_blocks(args.path))
            if (b.layer != moe.front()) return std::nullopt;
        return moe.front();
    } catch (const Error& e) {
        rethrow_naming(e, args.path);
    }
}

MoeLayer load_checkpoint_moe(const WeightsArgs& args, std::int64_t layer, const Options& options) {
    try {
        return load_moe_layer(args.path, layer, options);
    } catch (const Error& e) {
        // The blocks' own errors (a bad --threads) are no problem of the file.
        if (std::string(e.what()).rfind("Ffn: ", 0) == 0) throw;
        rethrow_naming(e, args.path);
    }
}

MoeInfo describe_checkpoint_moe(const WeightsArgs& args, std::int64_t layer) {
    try {
        return describe_moe_layer(args.path, layer);
    } catch (const Error& e) {
        rethrow_naming(e, args.path);
    }
}

void add_weights_options(CLI::App& command, WeightsArgs& args, bool required) {
    command
        .add_option("--weights", args.path,
                    "the checkpoint: a safetensors or GGUF file, a sharded one's "
                    "model.safetensors.index.json, or the folder that holds either")
        ->required(required)
        ->type_name("FILE");
    CLI::Option* layer =
        command
            .add_option("--layer", args.layer,
                        "the block of layer N (model.layers.N.mlp., layers.N.feed_forward., "
                        "blocks.N.ffn., ...) in a checkpoint with several; a Mixture-of-Experts "
                        "layer whole (router, experts, shared experts)")
            ->type_name("N")
            ->check(non_negative(">= 0"));
    CLI::Option* expert = command
                              .add_option("--expert", args.expert,
                                          "expert E of a Mixture-of-Experts layer alone "
                                          "(...experts.E.; with --layer N when there are several)")
                              ->type_name("E")
                              ->check(non_negative(">= 0"));
    CLI::Option* block =
        command
            .add_option("--block,--prefix", args.prefix,
                        "the block whose tensors are P + a scheme's names, e.g. "
                        "'model.layers.3.mlp.' ('swiglu info --weights FILE' lists them)")
            ->type_name("P");
    for (CLI::Option* other : {layer, expert}) {
        block->excludes(other);
        other->excludes(block);
    }
    if (required) return;
    // Selecting a block only means something with a checkpoint to select from.
    for (CLI::Option* o : {layer, expert, block}) o->needs("--weights");
}

void add_threads_option(CLI::App& command, int& threads) {
    command
        .add_option("--threads", threads,
                    "threads for the forward pass, the calling one included; "
                    "0 = every core this process may run on")
        ->capture_default_str()
        ->type_name("N")
        ->check(non_negative("0 (all cores) or a thread count"));
}

void add_dtype_option(CLI::App& command, std::string& dtype) {
    // Names only, from the format table (through the public dtype names):
    // a number or an unknown name is refused with the list, not mapped.
    std::string help =
        "format of the packed weights and matmuls: stored (each weight as the file stores it "
        "where a block runs that format, else f32; the default for GGUF files, f32 for the "
        "others)";
    std::string names = kStored;
    for (Dtype t : kDtypes) {
        const detail::FormatTraits& format = detail::traits(t);
        help += std::string(", ") + format.name + " (" + format.about + ")";
        names += std::string("|") + format.name;
    }
    command.add_option("--dtype", dtype, help + "; x and y stay float32")
        ->check(CLI::Validator(
            [](std::string& value) -> std::string {
                Dtype parsed;
                if (!is_stored(value) && !dtype_from_name(value, &parsed))
                    return "unknown dtype '" + value + "': use stored, " + dtype_names();
                return {};
            },
            "", "dtype"))
        ->type_name(names);
}

Options block_options(const std::string& weights, int threads, const std::string& dtype) {
    Options options;
    options.threads = threads;
    const bool stored = dtype.empty()
                            ? !weights.empty() && detail::CheckpointFiles::is_gguf(weights)
                            : is_stored(dtype);
    if (stored)
        options.keep_stored = true;  // dtype stays f32: the formats no block runs (F16)
    else if (!dtype.empty() && !dtype_from_name(dtype, &options.dtype))
        detail::invalid("unknown dtype '" + dtype + "'");  // the option's check refused it first
    return options;
}

}  // namespace swiglu::cli
