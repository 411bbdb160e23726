// `swiglu run`: y = block(x) for x and y in .npy files.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli/npy.hpp"
#include "weights_options.hpp"

namespace swiglu::cli {

struct RunArgs {
    WeightsArgs weights;
    std::string input, output, trace_dir;
    int threads = 0;
    std::string dtype;  // --dtype as given; "": the file's default (block_options)
};

// Registers the subcommand and its options on `app`; values land in `args`.
CLI::App* add_run_command(CLI::App& app, RunArgs& args);
// Runs it. Throws swiglu::Error (see exit_status.hpp for how it maps).
void run_command(const RunArgs& args);

// What `run` and `swiglu-mpi run` share: the options but --trace ...
void add_run_options(CLI::App& run, RunArgs& args);
// ... x read, its rank checked (before the checkpoint, which is slower) ...
detail::NpyArray read_input(const std::string& path);
// ... and the rows the block runs on: x's last dimension must be d.
std::int64_t input_rows(const detail::NpyArray& x, std::int64_t d, const std::string& path);

}  // namespace swiglu::cli
