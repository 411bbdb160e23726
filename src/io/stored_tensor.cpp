#include "io/stored_tensor.hpp"

#include <cstring>

#include <swiglu/swiglu.hpp>

#include "common/half.hpp"
#include "io/safetensors.hpp"  // quote_name
#include "kernels/ggml_blocks.hpp"

namespace swiglu::detail {

namespace {

template <class Block, class Decode>
void decode_blocks(const unsigned char* data, std::int64_t rows, std::int64_t row_length,
                   Decode decode, float* out) {
    const auto n = static_cast<std::size_t>(row_length);
    std::vector<Block> row(ggml_blocks(n));
    const std::size_t row_bytes = row.size() * sizeof(Block);
    for (std::int64_t r = 0; r < rows; ++r) {
        // Copied out: the file's blocks need not be aligned for Block.
        std::memcpy(row.data(), data + std::size_t(r) * row_bytes, row_bytes);
        decode(row.data(), n, out + std::size_t(r) * n);
    }
}

}  // namespace

std::uint64_t stored_row_bytes(StoredType type, std::int64_t n) {
    const auto values = static_cast<std::uint64_t>(n);
    switch (type) {
        case StoredType::f32: return values * 4;
        case StoredType::f16:
        case StoredType::bf16: return values * 2;
        case StoredType::q8_0: return values / kGgmlBlock * sizeof(BlockQ8_0);
        case StoredType::q4_0: return values / kGgmlBlock * sizeof(BlockQ4_0);
        case StoredType::other: break;
    }
    return 0;
}

std::vector<float> decode_to_f32(const StoredTensor& t, const std::string& label) {
    if (!readable(t.type))
        throw Error(Status::unsupported, label + ": tensor " + quote_name(t.name) + " has type " +
                                             t.type_name +
                                             ", which the loader does not read (F32, F16, BF16, "
                                             "Q8_0 and Q4_0 it does)");
    // The reader's count: multiplying the shape here in another order could
    // overflow where a 0 dimension made the product 0 (a fuzzer found that).
    const std::int64_t elements = t.elements;
    std::vector<float> out(static_cast<std::size_t>(elements));
    if (elements == 0) return out;
    const std::int64_t row = t.shape.empty() ? 1 : t.shape.back();
    const std::int64_t rows = elements / row;
    switch (t.type) {
        case StoredType::f32: std::memcpy(out.data(), t.data, out.size() * sizeof(float)); break;
        case StoredType::f16:
        case StoredType::bf16:
            for (std::size_t i = 0; i < out.size(); ++i) {
                std::uint16_t h;
                std::memcpy(&h, t.data + 2 * i, 2);
                out[i] = t.type == StoredType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
            }
            break;
        case StoredType::q8_0:
            decode_blocks<BlockQ8_0>(t.data, rows, row, dequantize_row_q8_0, out.data());
            break;
        case StoredType::q4_0:
            decode_blocks<BlockQ4_0>(t.data, rows, row, dequantize_row_q4_0, out.data());
            break;
        case StoredType::other: break;
    }
    return out;
}

}  // namespace swiglu::detail
