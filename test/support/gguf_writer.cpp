#include "gguf_writer.hpp"

#include <cstring>
#include <stdexcept>

#include "kernels/ggml_blocks.hpp"
#include "kernels/kquant_blocks.hpp"
#include "safetensors_writer.hpp"

namespace swiglu::test {

std::string le32(std::uint32_t v) {
    std::string s(4, '\0');
    std::memcpy(&s[0], &v, 4);
    return s;
}
std::string le64(std::uint64_t v) {
    std::string s(8, '\0');
    std::memcpy(&s[0], &v, 8);
    return s;
}
std::string gguf_string(const std::string& s) { return le64(s.size()) + s; }

namespace {

// Each row of ne0 values quantised to blocks of `Values` (the last padded).
template <class Block, std::size_t Values = swiglu::detail::kGgmlBlock, class Quantize>
std::string blocks(const std::vector<float>& values, std::int64_t ne0, Quantize quantize) {
    const std::size_t rows = values.size() / std::size_t(ne0);
    std::vector<Block> row((std::size_t(ne0) + Values - 1) / Values);
    std::string out;
    for (std::size_t r = 0; r < rows; ++r) {
        quantize(values.data() + r * std::size_t(ne0), std::size_t(ne0), row.data());
        out.append(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(Block));
    }
    return out;
}

}  // namespace

std::string ggml_bytes(std::uint32_t type, const std::vector<float>& values, std::int64_t ne0) {
    std::string out;
    switch (type) {
        case 0: out.assign(reinterpret_cast<const char*>(values.data()), values.size() * 4); break;
        case 1:
        case 30:
            for (float v : values) {
                const std::uint16_t h = type == 1 ? to_f16(v) : to_bf16(v);
                out.append(reinterpret_cast<const char*>(&h), 2);
            }
            break;
        case 8:
            out = blocks<swiglu::detail::BlockQ8_0>(values, ne0, swiglu::detail::quantize_row_q8_0);
            break;
        case 2:
            out = blocks<swiglu::detail::BlockQ4_0>(values, ne0, swiglu::detail::quantize_row_q4_0);
            break;
        case 12:
            out = blocks<swiglu::detail::BlockQ4K, swiglu::detail::kSuperBlock>(
                values, ne0, swiglu::detail::quantize_row_k<swiglu::detail::BlockQ4K>);
            break;
        case 13:
            out = blocks<swiglu::detail::BlockQ5K, swiglu::detail::kSuperBlock>(
                values, ne0, swiglu::detail::quantize_row_k<swiglu::detail::BlockQ5K>);
            break;
        case 14:
            out = blocks<swiglu::detail::BlockQ6K, swiglu::detail::kSuperBlock>(
                values, ne0, swiglu::detail::quantize_row_k<swiglu::detail::BlockQ6K>);
            break;
        default:
            throw std::runtime_error("ggml_bytes: give raw bytes for type " + std::to_string(type));
    }
    return out;
}

void GgufMetadata::string(const std::string& key, const std::string& value) {
    raw(key, 8, gguf_string(value));
}
void GgufMetadata::u32(const std::string& key, std::uint32_t value) { raw(key, 4, le32(value)); }
void GgufMetadata::f32(const std::string& key, float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, 4);
    raw(key, 6, le32(bits));
}
void GgufMetadata::strings(const std::string& key, const std::vector<std::string>& values) {
    std::string v = le32(8) + le64(values.size());
    for (const std::string& s : values) v += gguf_string(s);
    raw(key, 9, v);
}
void GgufMetadata::raw(const std::string& key, std::uint32_t type, const std::string& value_bytes) {
    bytes += gguf_string(key) + le32(type) + value_bytes;
    ++count;
}

std::string gguf_bytes(const std::vector<GgufTensorSpec>& tensors, const GgufMetadata& metadata,
                       const GgufOptions& options) {
    std::string head = "GGUF" + le32(options.version) + le64(tensors.size()) +
                       le64(metadata.count) + metadata.bytes;
    std::string data;
    for (const GgufTensorSpec& t : tensors) {
        const std::string bytes = t.raw.empty() ? ggml_bytes(t.type, t.values, t.ne[0]) : t.raw;
        while (data.size() % options.alignment) data += '\0';
        head += gguf_string(t.name) + le32(std::uint32_t(t.ne.size()));
        for (std::int64_t n : t.ne) head += le64(std::uint64_t(n));
        head += le32(t.type) + le64(data.size());
        data += bytes;
    }
    while (head.size() % options.alignment) head += '\0';
    return head + data;
}

}  // namespace swiglu::test
