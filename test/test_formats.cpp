// The format table (formats/format_table.hpp): every row against what its
// fields promise.
//  - names, GGUF type ids and safetensors dtypes find their row, any case
//    for our names, and nothing else finds one;
//  - each decoder gives the values the format defines (F32 copied, F16 and
//    BF16 widened, Q8_0 and Q4_0 as ggml_blocks decodes them, the K-quants
//    as kquant_blocks does), from bytes at any alignment;
//  - each quantiser is ggml_blocks' (kquant_blocks') reference rounding, bit
//    for bit;
//  - decode_values over any sub-range, block edges and partial blocks
//    included, equals the matching slice of a whole-row decode;
//  - the public dtype names come from the rows that run.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/half.hpp"
#include "formats/format_table.hpp"
#include "io/gguf.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kquant_blocks.hpp"
#include "reference.hpp"

using namespace swiglu::detail;
using swiglu::Dtype;

namespace {

// `n` values stored in format `t` (blocks from ggml_blocks' or
// kquant_blocks' quantiser, the
// element types rounded the way a checkpoint would hold them), and the
// values they mean, decoded by the format's own reference code.
struct Stored {
    std::vector<unsigned char> bytes;
    std::vector<float> values;
};

// A row quantised by ggml_blocks' reference code, and its values.
template <class Block, void (*Quantize)(const float*, std::size_t, Block*) noexcept,
          void (*Dequantize)(const Block*, std::size_t, float*) noexcept>
void store_blocks(const std::vector<float>& x, Stored& s) {
    std::vector<Block> b(ggml_blocks(x.size()));
    Quantize(x.data(), x.size(), b.data());
    std::memcpy(s.bytes.data(), b.data(), s.bytes.size());
    Dequantize(b.data(), x.size(), s.values.data());
}

// A K-quant row: kquant_blocks' quantiser, then its decoder.
template <class Block>
void store_k(const std::vector<float>& x, Stored& s) {
    std::vector<Block> b(super_blocks(x.size()));
    quantize_row_k(x.data(), x.size(), b.data());
    std::memcpy(s.bytes.data(), b.data(), s.bytes.size());
    dequantize_row_k(b.data(), x.size(), s.values.data());
}

Stored store(const FormatTraits& t, const std::vector<float>& x) {
    Stored s;
    const std::size_t n = x.size();
    s.bytes.resize(row_bytes(t, std::int64_t(n)));
    s.values.resize(n);
    switch (t.format) {  // the independent reference for each row
        case Format::f32:
            std::memcpy(s.bytes.data(), x.data(), n * 4);
            s.values = x;
            break;
        case Format::bf16:
        case Format::f16:
            for (std::size_t i = 0; i < n; ++i) {
                std::uint32_t bits;
                std::memcpy(&bits, &x[i], 4);
                // Any top half of an f32 is a bf16 value.
                const std::uint16_t h =
                    t.format == Format::bf16 ? std::uint16_t(bits >> 16) : f32_to_f16(x[i]);
                std::memcpy(s.bytes.data() + 2 * i, &h, 2);
                s.values[i] = t.format == Format::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
            }
            break;
        case Format::q8_0:
            store_blocks<BlockQ8_0, quantize_row_q8_0, dequantize_row_q8_0>(x, s);
            break;
        case Format::q4_0:
            store_blocks<BlockQ4_0, quantize_row_q4_0, dequantize_row_q4_0>(x, s);
            break;
        case Format::q4_k: store_k<BlockQ4K>(x, s); break;
        case Format::q5_k: store_k<BlockQ5K>(x, s); break;
        case Format::q6_k: store_k<BlockQ6K>(x, s); break;
        case Format::int8: break;
    }
    return s;
}

}  // namespace

TEST_SUITE("formats") {
TEST_CASE("every row is found by its names and ids, in Format's order") {
    for (int i = 0; i < kFormatCount; ++i) {
        const FormatTraits& t = format_table()[i];
        CAPTURE(std::string(t.name));
        CHECK(static_cast<int>(t.format) == i);
        CHECK(&traits(t.format) == &t);
        CHECK(format_by_name(t.name) == &t);
        // A stored format's file name is ours in upper case: it finds it too.
        if (t.decode) CHECK(format_by_name(t.stored_name) == &t);
        CHECK(t.block >= 1);
        CHECK(t.block_bytes >= 1);
        if (t.runs) CHECK(&traits(t.dtype) == &t);
        if (t.decode && t.gguf_type >= 0) CHECK(format_by_gguf_type(t.gguf_type) == &t);
        if (t.decode && t.safetensors) CHECK(format_by_safetensors(t.stored_name) == &t);
        CHECK((t.numerics == NumericsKind::none) == !t.runs);
    }
    for (Dtype d : swiglu::kDtypes) CHECK(traits(d).runs);
    CHECK(format_by_name("fp16") == nullptr);
    CHECK(format_by_name("") == nullptr);
    CHECK(format_by_gguf_type(3) == nullptr);   // Q4_1: GGUF has it, we don't read it
    CHECK(format_by_gguf_type(24) == nullptr);  // I8: not a weight format
    CHECK(format_by_safetensors("I8") == nullptr);
    CHECK(format_by_safetensors("Q4_0") == nullptr);  // not a safetensors dtype
    CHECK(format_by_safetensors("bf16") == nullptr);  // safetensors' names are exact
}

TEST_CASE("sizes: bytes per block and per row, the last block padded") {
    CHECK(row_bytes(traits(Format::f32), 341) == 1364);
    CHECK(row_bytes(traits(Format::bf16), 341) == 682);
    CHECK(row_bytes(traits(Format::q8_0), 64) == 68);
    CHECK(row_bytes(traits(Format::q4_0), 33) == 36);  // 2 blocks, the second padded
    CHECK(bytes_per_value(traits(Format::q4_0)) == doctest::Approx(18.0 / 32));
    CHECK(row_bytes(traits(Format::q8_0), 0) == 0);
    CHECK(row_bytes(traits(Format::q4_k), 300) == 288);  // super-blocks of 256
    CHECK(row_bytes(traits(Format::q5_k), 256) == 176);
    CHECK(row_bytes(traits(Format::q6_k), 257) == 420);
}

TEST_CASE("decoders and quantisers are the formats' own, at any alignment") {
    for (int i = 0; i < kFormatCount; ++i) {
        const FormatTraits& t = format_table()[i];
        if (!t.decode) continue;
        CAPTURE(std::string(t.name));
        for (std::size_t whole : {1u, 2u, 3u, 11u}) {  // blocks of 32, or super-blocks
            const std::size_t n = whole * std::size_t(t.block > 32 ? t.block : 32);
            CAPTURE(n);
            const std::vector<float> x = swiglu::test::uniform(n, 2.f, unsigned(7 + n));
            const Stored s = store(t, x);
            for (std::size_t shift : {0u, 1u, 3u}) {  // the file's bytes need not be aligned
                std::vector<unsigned char> at(s.bytes.size() + shift);
                std::memcpy(at.data() + shift, s.bytes.data(), s.bytes.size());
                std::vector<float> out(n, -7.f);
                t.decode(at.data() + shift, n, out.data());
                CHECK(std::memcmp(out.data(), s.values.data(), n * 4) == 0);
            }
            if (t.quantize) {
                std::vector<unsigned char> q(s.bytes.size() + 64);
                auto* aligned =
                    q.data() + (16 - reinterpret_cast<std::uintptr_t>(q.data()) % 16) % 16;
                t.quantize(x.data(), n, aligned);
                CHECK(std::memcmp(aligned, s.bytes.data(), s.bytes.size()) == 0);
            }
        }
    }
}

TEST_CASE("decode_values of any range equals the slice of the whole row") {
    std::vector<float> scratch;
    for (int i = 0; i < kFormatCount; ++i) {
        const FormatTraits& t = format_table()[i];
        if (!t.decode) continue;
        CAPTURE(std::string(t.name));
        const std::size_t n = t.block > 32 ? 600 : 160;  // a padded last block
        const Stored s = store(t, swiglu::test::uniform(n, 1.f, 11u));
        for (std::int64_t begin : {0, 1, 31, 32, 33, 95, 159, 255, 256, 257, 511})
            for (std::int64_t count : {1, 2, 31, 32, 33, 64, 127, 256, 300}) {
                if (begin + count > std::int64_t(n)) continue;
                CAPTURE(begin);
                CAPTURE(count);
                std::vector<float> out(static_cast<std::size_t>(count));
                decode_values(t, s.bytes.data(), begin, count, out.data(), scratch);
                CHECK(std::memcmp(out.data(), s.values.data() + begin, out.size() * 4) == 0);
            }
    }
}

TEST_CASE("the names lists come from the table") {
    CHECK(format_names(FormatSet::runs) == "f32, bf16, int8, q8_0, q4_0, q4_k, q5_k or q6_k");
    CHECK(format_names(FormatSet::stored, ", ", " and ") ==
          "F32, BF16, F16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K");
    CHECK(format_names(FormatSet::safetensors) == "F32, BF16 or F16");
    CHECK(format_names(FormatSet::gguf_only) == "Q8_0, Q4_0, Q4_K, Q5_K or Q6_K");
    CHECK(swiglu::dtype_names() == format_names(FormatSet::runs));
    Dtype d = Dtype::f32;
    CHECK(swiglu::dtype_from_name("Q4_0", &d));
    CHECK(d == Dtype::q4_0);
    CHECK_FALSE(swiglu::dtype_from_name("f16", &d));   // stored, not run
    CHECK_FALSE(swiglu::dtype_from_name("q2_k", &d));  // a GGUF type we do not read
    CHECK_FALSE(swiglu::dtype_from_name("3", &d));
    CHECK(d == Dtype::q4_0);  // untouched on failure
    CHECK(swiglu::dtype_from_name("Q6_K", &d));
    CHECK(d == Dtype::q6_k);
    // The block formats, whose phases may differ in one block.
    for (Dtype t : swiglu::kDtypes)
        CHECK(swiglu::is_block_dtype(t) == (traits(t).numerics == NumericsKind::grouped));
    for (Dtype t : swiglu::kDtypes) {
        Dtype back = Dtype::f32;
        CHECK(swiglu::dtype_from_name(swiglu::dtype_name(t), &back));
        CHECK(back == t);
    }
}
}
