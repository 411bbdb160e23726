// The rows of the format table, and the look-ups over them.
#include "formats/format_table.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/half.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kquant_blocks.hpp"

namespace swiglu::detail {

namespace {

// ---- decoders: the stored bytes need not be aligned, so each value or
// block is copied out before it is read.
void decode_f32(const unsigned char* bytes, std::size_t n, float* out) noexcept {
    std::memcpy(out, bytes, n * sizeof(float));
}

template <float (*Widen)(std::uint16_t)>
void decode_half(const unsigned char* bytes, std::size_t n, float* out) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        out[i] = Widen(h);
    }
}

float widen_f16(std::uint16_t h) { return f16_to_f32(h); }
float widen_bf16(std::uint16_t h) { return bf16_to_f32(h); }

template <class Block, std::size_t Values,
          void (*Dequantize)(const Block*, std::size_t, float*) noexcept>
void decode_blocks(const unsigned char* bytes, std::size_t n, float* out) noexcept {
    for (std::size_t i = 0; i < n; i += Values) {
        Block b;
        std::memcpy(&b, bytes + i / Values * sizeof(Block), sizeof(Block));
        Dequantize(&b, Values, out + i);
    }
}

template <class Block, void (*Quantize)(const float*, std::size_t, Block*) noexcept>
void quantize_blocks(const float* x, std::size_t n, void* out) noexcept {
    Quantize(x, n, static_cast<Block*>(out));
}

constexpr FormatTraits kTable[] = {
    {Format::f32, "f32", "F32", 1, 4, 0, true, true, Dtype::f32, NumericsKind::f32, Activation::f32,
     GroupedFormat::q8_0, &decode_f32, nullptr, "exact"},
    {Format::bf16, "bf16", "BF16", 1, 2, 30, true, true, Dtype::bf16, NumericsKind::bf16,
     Activation::bf16, GroupedFormat::q8_0, &decode_half<widen_bf16>, nullptr,
     "half the bytes, bf16-rounded inputs"},
    {Format::f16, "f16", "F16", 1, 2, 1, true, false, Dtype::f32, NumericsKind::none,
     Activation::f32, GroupedFormat::q8_0, &decode_half<widen_f16>, nullptr,
     "IEEE half, read exactly (storage only)"},
    {Format::int8, "int8", "I8", 1, 1, -1, false, true, Dtype::int8, NumericsKind::int8,
     Activation::s8_per_row, GroupedFormat::q8_0, nullptr, nullptr,
     "a quarter, per-channel/per-token scales"},
    {Format::q8_0, "q8_0", "Q8_0", 32, sizeof(BlockQ8_0), 8, false, true, Dtype::q8_0,
     NumericsKind::grouped, Activation::q8_0_blocks, GroupedFormat::q8_0,
     &decode_blocks<BlockQ8_0, kGgmlBlock, dequantize_row_q8_0>,
     &quantize_blocks<BlockQ8_0, quantize_row_q8_0>, "GGUF's blocks of 32: 8.5 bits per weight"},
    {Format::q4_0, "q4_0", "Q4_0", 32, sizeof(BlockQ4_0), 2, false, true, Dtype::q4_0,
     NumericsKind::grouped, Activation::q8_0_blocks, GroupedFormat::q4_0,
     &decode_blocks<BlockQ4_0, kGgmlBlock, dequantize_row_q4_0>,
     &quantize_blocks<BlockQ4_0, quantize_row_q4_0>, "GGUF's blocks of 32: 4.5 bits per weight"},
    // GGUF's K-quants: super-blocks of 256 on our K-quant kernels
    // (kernels/kquant_gemm.hpp), x and act in llama.cpp's Q8_K blocks.
    {Format::q4_k, "q4_k", "Q4_K", 256, sizeof(BlockQ4K), 12, false, true, Dtype::q4_k,
     NumericsKind::grouped, Activation::q8_k_blocks, GroupedFormat::q4_k,
     &decode_blocks<BlockQ4K, kSuperBlock, dequantize_row_k<BlockQ4K>>,
     &quantize_blocks<BlockQ4K, quantize_row_k<BlockQ4K>>,
     "GGUF's super-blocks of 256: 4.5 bits per weight"},
    {Format::q5_k, "q5_k", "Q5_K", 256, sizeof(BlockQ5K), 13, false, true, Dtype::q5_k,
     NumericsKind::grouped, Activation::q8_k_blocks, GroupedFormat::q5_k,
     &decode_blocks<BlockQ5K, kSuperBlock, dequantize_row_k<BlockQ5K>>,
     &quantize_blocks<BlockQ5K, quantize_row_k<BlockQ5K>>,
     "GGUF's super-blocks of 256: 5.5 bits per weight"},
    {Format::q6_k, "q6_k", "Q6_K", 256, sizeof(BlockQ6K), 14, false, true, Dtype::q6_k,
     NumericsKind::grouped, Activation::q8_k_blocks, GroupedFormat::q6_k,
     &decode_blocks<BlockQ6K, kSuperBlock, dequantize_row_k<BlockQ6K>>,
     &quantize_blocks<BlockQ6K, quantize_row_k<BlockQ6K>>,
     "GGUF's super-blocks of 256: 6.5625 bits per weight"},
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == kFormatCount, "a row per Format");

constexpr bool in_order() {
    for (int i = 0; i < kFormatCount; ++i)
        if (static_cast<int>(kTable[i].format) != i) return false;
    return true;
}
static_assert(in_order(), "the rows follow Format's order");

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

bool in_set(const FormatTraits& t, FormatSet set) {
    switch (set) {
        case FormatSet::runs: return t.runs;
        case FormatSet::stored: return t.decode != nullptr;
        case FormatSet::safetensors: return t.decode && t.safetensors;
        case FormatSet::gguf_only: return t.decode && !t.safetensors && t.gguf_type >= 0;
    }
    return false;
}

}  // namespace

const FormatTraits* format_table() noexcept { return kTable; }

const FormatTraits& traits(Format format) noexcept {
    return kTable[static_cast<std::size_t>(format)];
}

const FormatTraits& traits(Dtype dtype) noexcept {
    for (const FormatTraits& t : kTable)
        if (t.runs && t.dtype == dtype) return t;
    return kTable[0];  // unreachable for a valid Dtype (every one has a row)
}

const FormatTraits* format_by_name(std::string_view name) noexcept {
    for (const FormatTraits& t : kTable)
        if (same_name(name, t.name)) return &t;
    return nullptr;
}

const FormatTraits* format_by_gguf_type(std::uint32_t id) noexcept {
    for (const FormatTraits& t : kTable)
        if (t.gguf_type >= 0 && std::uint32_t(t.gguf_type) == id && t.decode) return &t;
    return nullptr;
}

const FormatTraits* format_by_safetensors(std::string_view dtype) noexcept {
    for (const FormatTraits& t : kTable)
        if (t.safetensors && t.decode && dtype == t.stored_name) return &t;
    return nullptr;
}

void decode_values(const FormatTraits& t, const unsigned char* row, std::int64_t begin,
                   std::int64_t count, float* out, std::vector<float>& scratch) {
    if (count <= 0) return;
    const auto block = static_cast<std::size_t>(t.block);
    const std::size_t first = std::size_t(begin) / block;
    const std::size_t last = std::size_t(begin + count - 1) / block;
    const unsigned char* from = row + first * t.block_bytes;
    if (block == 1) {
        t.decode(from, std::size_t(count), out);
        return;
    }
    const std::size_t values = (last - first + 1) * block;
    if (scratch.size() < values) scratch.resize(values);
    t.decode(from, values, scratch.data());
    std::memcpy(out, scratch.data() + (std::size_t(begin) - first * block),
                std::size_t(count) * sizeof(float));
}

std::string format_names(FormatSet set, const char* separator, const char* last) {
    std::vector<const char*> names;
    for (const FormatTraits& t : kTable)
        if (in_set(t, set)) names.push_back(set == FormatSet::runs ? t.name : t.stored_name);
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i) out += i + 1 == names.size() ? last : separator;
        out += names[i];
    }
    return out;
}

}  // namespace swiglu::detail
