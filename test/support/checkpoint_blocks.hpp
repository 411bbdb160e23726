// Checkpoints the loader suites write: a block's tensors under a naming
// scheme's names (and any prefix), written to a safetensors file, loaded,
// and checked against the fp64 reference; and the check that a load fails
// with a message naming the file.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "error_checks.hpp"
#include "reference.hpp"
#include "safetensors_writer.hpp"

namespace swiglu::test {

struct Scheme {
    const char* name;    // what load_weights reports
    const char* prefix;  // where the scheme puts the block
    const char* gate;    // names after the prefix (gate_up for phi3-merged)
    const char* up;      // nullptr: merged into gate
    const char* down;
    Layout layout;
};

extern const Scheme kHfLlama, kPhi3, kBare, kCyberslm, kGlassllm, kCyberslmBare, kMeta;
// Every scheme a single-block file can hold, in the table above's order.
extern const std::vector<Scheme> kSchemes;

std::string layer_prefix(int layer);  // "model.layers.{layer}.mlp."

// The tensors of `b` (stored in the scheme's layout) under the scheme's
// names, placed under `prefix` instead of the scheme's own if one is given.
std::vector<TensorSpec> block_tensors(const Scheme& s, const RandomBlock& b,
                                      const std::string& dtype, const char* prefix = nullptr);
void append(std::vector<TensorSpec>& to, const std::vector<TensorSpec>& more);

// A fresh model.safetensors in a temporary directory.
std::string write_checkpoint(const std::vector<TensorSpec>& tensors,
                             const std::string& metadata = "");

// The error load_weights throws for `path` (a failed check if none).
std::string load_error(const std::string& path, const WeightSelector& selector = {},
                       Status status = Status::invalid_argument);

// The loaded block runs like the fp64 reference on the weights as stored.
void check_forward(const LoadedWeights& w, const RandomBlock& expected, const std::string& path,
                   const WeightSelector& selector);

}  // namespace swiglu::test

// `path` is evaluated once (it may write a fresh file).
#define CHECK_LOAD_FAILS(path, selector, needle)                                \
    do {                                                                        \
        const std::string path_ = path;                                         \
        const std::string message_ = swiglu::test::load_error(path_, selector); \
        INFO("message: " << message_);                                          \
        CHECK(swiglu::test::contains(message_, path_ + ": "));                  \
        CHECK(swiglu::test::contains(message_, needle));                        \
    } while (0)
