// A tensor as a checkpoint file stores it, whatever the container
// (safetensors, GGUF): what the loader needs to check a block's shapes and
// to read its values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swiglu::detail {

// The element types the loader reads; every other one is `other`.
enum class StoredType { f32, f16, bf16, q8_0, q4_0, other };

struct StoredTensor {
    std::string_view name;
    StoredType type = StoredType::other;
    std::string type_name;  // as the file names it: "BF16", "Q4_0", "I32", "ggml type 23"
    // Outermost first, as PyTorch orders it: a weight is (out, in), its rows
    // shape.back() values long (GGUF's ne reversed).
    std::vector<std::int64_t> shape;
    std::int64_t elements = 0;  // the product of shape, as the reader checked it (no overflow)
    const unsigned char* data = nullptr;  // the validated bytes (not for `other`)
    std::uint64_t bytes = 0;
};

// Bytes of one stored row of n values of a readable type (Q8_0 / Q4_0:
// n a multiple of 32); 0 for `other`.
std::uint64_t stored_row_bytes(StoredType type, std::int64_t n);

// Whether the loader reads `type` (to f32, exactly).
inline bool readable(StoredType type) { return type != StoredType::other; }

// The values, row-major, exactly: F32 copied, F16 and BF16 widened, Q8_0
// and Q4_0 decoded block by block (q * d, (q - 8) * d). `label` names the
// file in the error for a type the loader does not read (Status::unsupported).
std::vector<float> decode_to_f32(const StoredTensor& tensor, const std::string& label);

}  // namespace swiglu::detail
