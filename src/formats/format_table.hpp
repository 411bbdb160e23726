// The weight formats, as data: one record per format with everything the
// rest of the library asks of it — its names (ours, GGUF's, safetensors'),
// its block, its bytes, how its stored bytes decode to f32, how f32
// quantises to it, the kernels that multiply it and the activation format
// they pair with, and whether a block can run in it (a public Dtype).
//
// io reads the file's type through it (GGUF type id, safetensors dtype),
// core decodes stored weights and picks the numerics through it, and the
// faces list and parse dtypes through it: the C API and Python through the
// public dtype functions (swiglu.hpp), the CLI also reading each row's
// `about` and the names for its help. A new format is a row here
// (format_table.cpp) plus its kernels and tests; nothing else in the
// library switches over formats.
//
// The layer sits above kernels/ (it points at their decoders) and below
// core/ and io/; it needs no oneDNN, so the fuzzers link it with the readers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <swiglu/swiglu.hpp>

#include "kernels/grouped_layout.hpp"

namespace swiglu::detail {

// Every weight format the library knows: what a checkpoint may store (f16
// and GGUF's K-quants are storage only) and what a block may run in (int8 is
// run only: no file format of ours holds it).
enum class Format : std::uint8_t { f32, bf16, f16, int8, q8_0, q4_0, q4_k, q5_k, q6_k };
inline constexpr int kFormatCount = 9;

// The family of numerics (core's precision modes) that runs a format's
// matmuls; `none` for a storage-only format.
enum class NumericsKind : std::uint8_t { none, f32, bf16, int8, grouped };

// What the activations (x, and act between the phases) are converted to
// for the format's matmuls.
enum class Activation : std::uint8_t {
    f32,          // as they are
    bf16,         // rounded to bf16 (nearest even)
    s8_per_row,   // s8 with one f32 scale per token row
    q8_0_blocks,  // s8 in blocks of 32 with an f32 scale each (kernels/act_block.hpp)
    q8_k_blocks,  // s8 in blocks of 256 with an f32 scale and sums of 16 (ActBlockK)
};

// Decodes `n` values (a whole number of blocks) from `bytes`, which need not
// be aligned, to f32 exactly as the format defines them.
using DecodeFn = void (*)(const unsigned char* bytes, std::size_t n, float* out) noexcept;
// Quantises one row of `n` values into its blocks (the last one padded with
// zeros), at `out` aligned for the format's block.
using QuantizeFn = void (*)(const float* x, std::size_t n, void* out) noexcept;

struct FormatTraits {
    Format format;
    const char* name;         // ours: --dtype, Python's dtype=, messages ("q4_0")
    const char* stored_name;  // as GGUF and safetensors spell it ("Q4_0")
    std::int64_t block;       // values per block (1: an element type)
    std::size_t block_bytes;  // bytes per block
    int gguf_type;            // ggml's type id; -1: not a GGUF type we read
    bool safetensors;         // a safetensors dtype of that stored_name
    bool runs;                // a block runs in it: `dtype` is its public Dtype
    Dtype dtype;
    NumericsKind numerics;
    Activation activation;
    // Its kernels: for NumericsKind::grouped, its layout and its entry in
    // each ISA's grouped (kernels/grouped_gemm.hpp) or K-quant kernels
    // (kernels/kquant_gemm.hpp); the other families have one kernel set for
    // all their formats.
    GroupedFormat grouped;
    DecodeFn decode;      // nullptr: never stored
    QuantizeFn quantize;  // nullptr: not a block format of its own (element types convert)
    const char* about;    // one line for --help and messages
};

// Every format, in Format's order.
const FormatTraits* format_table() noexcept;
const FormatTraits& traits(Format format) noexcept;
// The format a Dtype runs in.
const FormatTraits& traits(Dtype dtype) noexcept;

// Look-ups of a file's or a caller's name; nullptr when no format has it.
const FormatTraits* format_by_name(std::string_view name) noexcept;  // "q4_0", any case
const FormatTraits* format_by_gguf_type(std::uint32_t id) noexcept;
const FormatTraits* format_by_safetensors(std::string_view dtype) noexcept;  // "BF16"

// Bytes per weight (Q4_0: 18 / 32).
inline double bytes_per_value(const FormatTraits& t) {
    return double(t.block_bytes) / double(t.block);
}
// Bytes of one stored row of n values: whole blocks, the last one padded.
inline std::uint64_t row_bytes(const FormatTraits& t, std::int64_t n) {
    const auto values = static_cast<std::uint64_t>(n), block = static_cast<std::uint64_t>(t.block);
    return (values + block - 1) / block * t.block_bytes;
}

// Values [begin, begin + count) of a stored row in format `t` (which must
// have a decoder). Of a row of blocks only the blocks that hold them are
// read; `scratch` holds a partial block's values (no allocation once it is
// large enough).
void decode_values(const FormatTraits& t, const unsigned char* row, std::int64_t begin,
                   std::int64_t count, float* out, std::vector<float>& scratch);

// Which formats a list of names holds.
enum class FormatSet {
    runs,         // a block runs in them: our names ("f32", ..., "q4_0")
    stored,       // a file may store them (they have a decoder): files' names ("F32", ...)
    safetensors,  // of those, the ones safetensors has
    gguf_only,    // of those, the ones only GGUF has ("Q8_0", "Q4_0")
};
// The names of a set for messages and help, in the table's order, joined
// with `separator`, the last two with `last` ("f32, bf16 or q4_0").
std::string format_names(FormatSet set, const char* separator = ", ", const char* last = " or ");

}  // namespace swiglu::detail
