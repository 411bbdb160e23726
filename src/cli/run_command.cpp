#include "run_command.hpp"

#include <optional>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/moe.hpp>
#include <swiglu/swiglu.hpp>

#include "atomic_file.hpp"
#include "cli/npy.hpp"
#include "common/messages.hpp"
#include "help_text.hpp"
#include "npy_output.hpp"
#include "trace_output.hpp"

namespace swiglu::cli {

using detail::invalid;

detail::NpyArray read_input(const std::string& path) {
    detail::NpyArray x;
    try {
        x = detail::read_npy(path);
    } catch (const Error& e) {
        // The reader's messages start with the path; say which argument it is.
        throw Error(e.status(), std::string("input ") + e.what());
    }
    // Rank first, before the (possibly slow) checkpoint load; d needs the weights.
    if (x.shape.size() != 2 && x.shape.size() != 3)
        invalid("input " + path + ": shape " + detail::shape_string(x.shape) +
                " is not (M, d) or (B, T, d)");
    return x;
}

std::int64_t input_rows(const detail::NpyArray& x, std::int64_t d, const std::string& path) {
    const std::int64_t last = x.shape.back();
    if (last != d)
        invalid("input " + path + ": shape " + detail::shape_string(x.shape) +
                " has last dimension " + std::to_string(last) +
                ", expected d = " + std::to_string(d) + " (the weights' model width)");
    return x.elements() / d;  // d >= 1: an Ffn has no empty dimension
}

void add_run_options(CLI::App& run, RunArgs& args) {
    add_weights_options(run, args.weights, /*required=*/true);
    run.add_option("--input", args.input, "x: float32 .npy of shape (M, d) or (B, T, d)")
        ->required()
        ->type_name("X.npy");
    run.add_option("--output", args.output,
                   "y: written as float32 .npy, x's shape (replaced atomically if it exists)")
        ->required()
        ->type_name("Y.npy");
    add_threads_option(run, args.threads);
    add_dtype_option(run, args.dtype);
}

CLI::App* add_run_command(CLI::App& app, RunArgs& args) {
    CLI::App* run = app.add_subcommand("run", help::run_description());
    run->footer(help::run_footer);
    add_run_options(*run, args);
    run->add_option("--trace", args.trace_dir,
                    "also write the intermediates gate, up, act, down as .npy files into DIR")
        ->type_name("DIR");
    return run;
}

void run_command(const RunArgs& args) {
    // Cheap checks first: a bad output path should not cost a checkpoint load.
    check_output_path(args.output, "output");
    const bool tracing = !args.trace_dir.empty();
    if (tracing) check_trace_dir(args.trace_dir);

    const detail::NpyArray x = read_input(args.input);
    const Options options = block_options(args.weights.path, args.threads, args.dtype);
    std::vector<float> y(x.data.size());
    // A Mixture-of-Experts layer runs whole: router, chosen experts, shared block.
    if (const std::optional<std::int64_t> layer = moe_layer_of(args.weights)) {
        if (tracing)
            invalid("--trace writes one block's intermediates, and layer " +
                    std::to_string(*layer) +
                    " is a Mixture-of-Experts layer: trace one of its experts with --expert E");
        const MoeLayer moe = load_checkpoint_moe(args.weights, *layer, options);
        moe.forward(x.data.data(), y.data(), input_rows(x, moe.d(), args.input));
        write_npy_file(args.output, y.data(), x.shape);
        return;
    }
    // Packed straight from the checkpoint (no f32 copy of it).
    const Ffn ffn = load_checkpoint_block(args.weights, options);
    const std::int64_t tokens = input_rows(x, ffn.d(), args.input);

    if (tracing) {
        Trace trace;
        ffn.forward_traced(x.data.data(), y.data(), tokens, trace);
        const std::vector<std::int64_t> leading(x.shape.begin(), x.shape.end() - 1);
        write_trace(args.trace_dir, leading, ffn.d(), ffn.f(), trace);
    } else {
        ffn.forward(x.data.data(), y.data(), tokens);
    }
    // Last, so that an output in place means the whole run succeeded.
    write_npy_file(args.output, y.data(), x.shape);
}

}  // namespace swiglu::cli
