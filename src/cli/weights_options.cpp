#include "weights_options.hpp"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <string>

#include "formats/format_table.hpp"

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

std::vector<BlockInfo> list_checkpoint(const WeightsArgs& args) {
    try {
        return list_blocks(args.path);
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
                        "blocks.N.ffn., ...) in a checkpoint with several")
            ->type_name("N")
            ->check(non_negative(">= 0"));
    CLI::Option* expert = command
                              .add_option("--expert", args.expert,
                                          "expert E of a Mixture-of-Experts layer "
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

void add_dtype_option(CLI::App& command, Dtype& dtype) {
    // Names only, from the format table (through the public dtype names):
    // a number or an unknown name is refused with the list, not mapped.
    std::string help = "precision of the weights and matmuls: ";
    std::string names;
    for (Dtype t : kDtypes) {
        const detail::FormatTraits& format = detail::traits(t);
        help += std::string(t == kDtypes[0] ? "" : ", ") + format.name + " (" + format.about + ")";
        names += std::string(t == kDtypes[0] ? "" : "|") + format.name;
    }
    command.add_option("--dtype", dtype, help + "; x and y stay float32")
        ->transform(CLI::Validator(
            [](std::string& value) -> std::string {
                Dtype parsed;
                if (!dtype_from_name(value, &parsed))
                    return "unknown dtype '" + value + "': use " + dtype_names();
                value = std::to_string(static_cast<int>(parsed));
                return {};
            },
            "", "dtype"))
        ->default_str("f32")
        ->type_name(names);
}

}  // namespace swiglu::cli
