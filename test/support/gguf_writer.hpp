// Writes GGUF files for the tests, per the published layout (little-endian:
// "GGUF", version, tensor count, metadata count, metadata, tensor infos,
// padding to the alignment, data): well-formed ones from values, and pieces
// to build malformed ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swiglu::test {

struct GgufTensorSpec {
    std::string name;
    std::uint32_t type;  // ggml type: 0 F32, 1 F16, 30 BF16, 8 Q8_0, 2 Q4_0, 12 Q4_K, 13 Q5_K,
                         // 14 Q6_K, or any
    std::vector<std::int64_t> ne;  // GGUF's order: ne[0] is a row's length
    std::vector<float> values;     // row-major; encoded as `type` (blocks by ggml's rounding)
    std::string raw;               // used as the bytes instead when not empty
};

// The stored bytes of `values` as ggml type `type` (rows of ne0 values).
std::string ggml_bytes(std::uint32_t type, const std::vector<float>& values, std::int64_t ne0);

// Metadata, appended as GGUF writes it.
struct GgufMetadata {
    std::string bytes;
    std::uint64_t count = 0;
    void string(const std::string& key, const std::string& value);
    void u32(const std::string& key, std::uint32_t value);
    void f32(const std::string& key, float value);
    void strings(const std::string& key, const std::vector<std::string>& values);  // an array
    void raw(const std::string& key, std::uint32_t type, const std::string& value_bytes);
};

struct GgufOptions {
    std::uint32_t version = 3;
    std::uint64_t alignment = 32;  // where tensors are placed (say so in metadata to change it)
};

std::string gguf_bytes(const std::vector<GgufTensorSpec>& tensors,
                       const GgufMetadata& metadata = {}, const GgufOptions& options = {});

// Little-endian pieces for hand-made files.
std::string le32(std::uint32_t v);
std::string le64(std::uint64_t v);
std::string gguf_string(const std::string& s);

}  // namespace swiglu::test
