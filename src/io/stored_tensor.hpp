// A tensor as a checkpoint file stores it, whatever the container
// (safetensors, GGUF): what the loader needs to check a block's shapes and
// to read its values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/format_table.hpp"

namespace swiglu::detail {

struct StoredTensor {
    std::string_view name;
    // The format table's row for the file's type, where it is one the
    // loader reads (it has a decoder); nullptr for every other type.
    const FormatTraits* format = nullptr;
    std::string type_name;  // as the file names it: "BF16", "Q4_0", "I32", "ggml type 23"
    // Outermost first, as PyTorch orders it: a weight is (out, in), its rows
    // shape.back() values long (GGUF's ne reversed).
    std::vector<std::int64_t> shape;
    std::int64_t elements = 0;  // the product of shape, as the reader checked it (no overflow)
    const unsigned char* data = nullptr;  // the validated bytes (not for an unread type)
    std::uint64_t bytes = 0;
};

// Whether the loader reads the tensor's type (to f32, exactly).
inline bool readable(const StoredTensor& t) { return t.format != nullptr; }

// Bytes of one stored row of n values (block formats: n whole blocks).
inline std::uint64_t stored_row_bytes(const StoredTensor& t, std::int64_t n) {
    return t.format ? row_bytes(*t.format, n) : 0;
}

// The values, row-major, exactly as the format's decoder gives them (F32
// copied, F16 and BF16 widened, Q8_0, Q4_0 and the K-quants decoded block
// by block).
// `label` names the file in the error for a type the loader does not read
// (Status::unsupported).
std::vector<float> decode_to_f32(const StoredTensor& tensor, const std::string& label);

}  // namespace swiglu::detail
