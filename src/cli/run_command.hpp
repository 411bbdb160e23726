// `swiglu run`: y = block(x) for x and y in .npy files.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "weights_options.hpp"

namespace swiglu::cli {

struct RunArgs {
    WeightsArgs weights;
    std::string input, output, trace_dir;
    int threads = 0;
    Dtype dtype = Dtype::f32;
};

// Registers the subcommand and its options on `app`; values land in `args`.
CLI::App* add_run_command(CLI::App& app, RunArgs& args);
// Runs it. Throws swiglu::Error (see exit_status.hpp for how it maps).
void run_command(const RunArgs& args);

}  // namespace swiglu::cli
