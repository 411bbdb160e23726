// `swiglu info`: what the library will run on this machine, and optionally
// what a checkpoint holds.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "weights_options.hpp"

namespace swiglu::cli {

struct InfoArgs {
    WeightsArgs weights;  // path empty: no checkpoint
    int threads = 0;
    std::string dtype;  // --dtype as given; "": the file's default (block_options)
};

CLI::App* add_info_command(CLI::App& app, InfoArgs& args);
// Prints to stdout. Throws swiglu::Error.
void info_command(const InfoArgs& args);

}  // namespace swiglu::cli
