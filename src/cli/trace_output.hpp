// `swiglu run --trace DIR`: the block's intermediates as .npy files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <swiglu/swiglu.hpp>

namespace swiglu::cli {

// Before any work: DIR is an existing, writable directory, or can be created
// (its parent exists). Throws swiglu::Error(invalid_argument) otherwise.
void check_trace_dir(const std::string& dir);

// Writes DIR/gate.npy, up.npy, act.npy (leading..., f) and down.npy
// (leading..., d), creating DIR if it does not exist. `leading` is the
// input's shape without its last dimension, so a (B, T, d) input gives
// (B, T, f) traces.
void write_trace(const std::string& dir, const std::vector<std::int64_t>& leading, std::int64_t d,
                 std::int64_t f, const Trace& trace);

}  // namespace swiglu::cli
