// GGUF, llama.cpp's model format: files written here per the published
// layout, blk.N.ffn_{gate,up,down}.weight found and run against the fp64
// reference in F32, F16, BF16, Q8_0 and Q4_0 (blocks decoded exactly), and
// every malformed file refused with its message.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>

#include "checkpoint_blocks.hpp"
#include "gguf_writer.hpp"
#include "io/checkpoint_files.hpp"
#include "io/gguf.hpp"
#include "kernels/ggml_blocks.hpp"

using namespace swiglu;
using namespace swiglu::test;
using swiglu::detail::GgufFile;

namespace {

struct GgmlCase {
    const char* name;
    std::uint32_t type;
};
const GgmlCase kTypes[] = {{"F32", 0}, {"F16", 1}, {"BF16", 30}, {"Q8_0", 8}, {"Q4_0", 2}};

// The values a tensor of `type` holds once stored: what the loader must give.
std::vector<float> stored_values(std::uint32_t type, const std::vector<float>& v,
                                 std::int64_t ne0) {
    using namespace swiglu::detail;
    if (type == 0) return v;
    if (type == 1) return rounded(v, "F16");
    if (type == 30) return rounded(v, "BF16");
    const std::string bytes = ggml_bytes(type, v, ne0);
    std::vector<float> out(v.size());
    const std::size_t rows = v.size() / std::size_t(ne0), n = std::size_t(ne0);
    for (std::size_t r = 0; r < rows; ++r) {
        if (type == 8) {
            std::vector<BlockQ8_0> b(ggml_blocks(n));
            std::memcpy(b.data(), bytes.data() + r * b.size() * sizeof(BlockQ8_0),
                        b.size() * sizeof(BlockQ8_0));
            dequantize_row_q8_0(b.data(), n, out.data() + r * n);
        } else {
            std::vector<BlockQ4_0> b(ggml_blocks(n));
            std::memcpy(b.data(), bytes.data() + r * b.size() * sizeof(BlockQ4_0),
                        b.size() * sizeof(BlockQ4_0));
            dequantize_row_q4_0(b.data(), n, out.data() + r * n);
        }
    }
    return out;
}

// A llama.cpp-style model: per layer the attention's tensors (not a block)
// and the FFN's, (out, in) as ne = [in, out]; metadata as llama.cpp writes.
struct Model {
    std::vector<GgufTensorSpec> tensors;
    std::vector<RandomBlock> blocks;
    GgufMetadata metadata;

    Model(std::uint32_t type, int layers, std::int64_t d, std::int64_t f) {
        metadata.string("general.architecture", "llama");
        metadata.u32("llama.block_count", std::uint32_t(layers));
        metadata.strings("tokenizer.ggml.tokens", {"<s>", "</s>", "hello"});
        metadata.f32("llama.rope.freq_base", 10000.0f);
        tensors.push_back(
            {"token_embd.weight", 0, {d, 3}, std::vector<float>(std::size_t(3 * d), 0.5f), ""});
        for (int n = 0; n < layers; ++n) {
            const std::string p = "blk." + std::to_string(n) + ".";
            blocks.emplace_back(d, f, Layout::out_in, unsigned(90 + n));
            const RandomBlock& b = blocks.back();
            tensors.push_back({p + "attn_q.weight",
                               0,
                               {d, d},
                               std::vector<float>(std::size_t(d * d), 0.25f),
                               ""});
            tensors.push_back({p + "ffn_gate.weight", type, {d, f}, b.gate, ""});
            tensors.push_back({p + "ffn_up.weight", type, {d, f}, b.up, ""});
            tensors.push_back({p + "ffn_down.weight", type, {f, d}, b.down, ""});
        }
    }
    std::string write(const GgufOptions& options = {}) const {
        const std::string path = temp_dir() + "/model.gguf";
        write_file(path, gguf_bytes(tensors, metadata, options));
        return path;
    }
};

std::string gguf_error(const std::string& bytes, Status status = Status::invalid_argument) {
    return error_message([&] { GgufFile::from_memory(bytes.data(), bytes.size(), "<gguf>"); },
                         status);
}

}  // namespace

TEST_SUITE("gguf") {

TEST_CASE("blk.N.ffn_* in every readable type loads exactly and runs like the reference") {
    const std::int64_t d = 64, f = 96;  // whole blocks of 32
    for (const GgmlCase& c : kTypes) {
        CAPTURE(c.name);
        const Model m(c.type, 3, d, f);
        const std::string path = m.write();
        const std::vector<BlockInfo> found = list_blocks(path);
        REQUIRE(found.size() == 3);
        CHECK(found[1].prefix == "blk.1.");
        CHECK(found[1].scheme == "gguf");
        CHECK(found[1].layer == 1);
        CHECK(found[1].d == d);
        CHECK(found[1].f == f);
        CHECK(found[1].source_dtype == c.name);
        const WeightSelector selector{1, "", -1};
        const LoadedWeights w = load_weights(path, selector);
        CHECK(w.gate_name == "blk.1.ffn_gate.weight");
        CHECK(w.gate == stored_values(c.type, m.blocks[1].gate, d));
        CHECK(w.up == stored_values(c.type, m.blocks[1].up, d));
        CHECK(w.down == stored_values(c.type, m.blocks[1].down, f));
        check_forward(w, m.blocks[1], path, selector);
        CHECK_LOAD_FAILS(path, WeightSelector{}, "holds 3 layers (\"blk.{N}\" with N = 0, 1, 2)");
    }
}

TEST_CASE("--dtype q8_0 / q4_0 run a file's blocks as stored, whoever made them") {
    // Blocks ggml's reference rounding would not make: scale 1.0, Q8_0 q in
    // [-10, 10] (ggml puts the largest |q| at 127), Q4_0 values in [-3, 3]
    // (ggml puts the largest at -8). Quantised again they would change;
    // stored, with x whose blocks quantise exactly (integers, one of them
    // 127 in each block of 32), gate and up are exact integer dot products.
    const std::int64_t d = 64, f = 32;
    std::vector<float> x(d);
    for (std::int64_t i = 0; i < d; ++i)
        x[std::size_t(i)] = float(i % 32 == 5 ? 127 : (i * 37) % 201 - 100);
    for (const GgmlCase& c : {kTypes[3], kTypes[4]}) {
        CAPTURE(c.name);
        const bool q8 = c.type == 8;
        Model m(c.type, 1, d, f);
        std::vector<std::vector<float>> values;  // gate, up, down as stored
        for (int t = 0; t < 3; ++t) {
            GgufTensorSpec& spec = m.tensors[std::size_t(2 + t)];
            const std::int64_t rows = spec.ne[1], row = spec.ne[0];
            std::string raw;
            std::vector<float> v;
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t b = 0; b < row / 32; ++b) {
                    raw += std::string("\x00\x3c", 2);  // scale 1.0 in f16
                    for (int i = 0; i < 32; ++i) {
                        const int q =
                            int((r * 13 + b * 7 + i * 5 + t) % (q8 ? 21 : 7)) - (q8 ? 10 : 3);
                        v.push_back(float(q));
                        if (q8) raw += static_cast<char>(q);
                    }
                    if (!q8)  // byte j: value j low nibble, j + 16 high; q + 8 stored
                        for (int j = 0; j < 16; ++j) {
                            const auto lo = std::uint8_t(v[v.size() - 32 + j] + 8),
                                       hi = std::uint8_t(v[v.size() - 16 + j] + 8);
                            raw += static_cast<char>(lo | (hi << 4));
                        }
                }
            spec.raw = raw;
            values.push_back(v);
        }
        const std::string path = m.write();
        const std::vector<BlockInfo> found = list_blocks(path);
        REQUIRE(found.size() == 1);
        CHECK(found[0].import_note == std::string("--dtype stored (or ") + (q8 ? "q8_0" : "q4_0") +
                                          ") runs the file's 192 " + c.name +
                                          " blocks as stored; other --dtype values start from "
                                          "their exact values");
        const LoadedWeights w = load_weights(path);
        CHECK(w.gate == values[0]);
        const Ffn ffn = load_ffn(path, {}, Options{1, q8 ? Dtype::q8_0 : Dtype::q4_0});
        std::vector<float> y(static_cast<std::size_t>(d));
        Trace trace;
        ffn.forward_traced(x.data(), y.data(), 1, trace);
        for (std::int64_t j = 0; j < f; ++j) {
            double gate = 0, up = 0;
            for (std::int64_t i = 0; i < d; ++i) {
                gate += double(x[std::size_t(i)]) * values[0][std::size_t(j * d + i)];
                up += double(x[std::size_t(i)]) * values[1][std::size_t(j * d + i)];
            }
            CHECK(trace.gate[std::size_t(j)] == gate);
            CHECK(trace.up[std::size_t(j)] == up);
        }
    }
}

// ggml-made blocks come back from quantising their values again, so the
// f32 copy and the blocks as stored give the same bits.
TEST_CASE("blocks pack straight from the file: the same bits as from an f32 copy") {
    const std::vector<float> x = random_input(3, 64, 4);
    for (const GgmlCase& c : kTypes) {
        const Model m(c.type, 1, 64, 96);
        const std::string path = m.write();
        const LoadedWeights w = load_weights(path);
        for (Dtype target : {Dtype::f32, Dtype::bf16, Dtype::q8_0, Dtype::q4_0}) {
            CAPTURE(c.name);
            CAPTURE(dtype_name(target));
            std::vector<float> direct(x.size()), copied(x.size());
            load_ffn(path, {}, Options{1, target}).forward(x.data(), direct.data(), 3);
            Ffn(w.gate_view(), w.up_view(), w.down_view(), Options{1, target})
                .forward(x.data(), copied.data(), 3);
            CHECK(direct == copied);
        }
    }
}

TEST_CASE("Mixture-of-Experts layers: ffn_*_exps stack the experts, one block each") {
    const std::int64_t d = 32, f = 64, experts = 3;
    for (const GgmlCase& c : {kTypes[0], kTypes[3]}) {
        CAPTURE(c.name);
        std::vector<RandomBlock> blocks;
        std::vector<float> gate, up, down;  // (E, out, in), expert after expert
        for (std::int64_t e = 0; e < experts; ++e) {
            blocks.emplace_back(d, f, Layout::out_in, unsigned(120 + e));
            gate.insert(gate.end(), blocks.back().gate.begin(), blocks.back().gate.end());
            up.insert(up.end(), blocks.back().up.begin(), blocks.back().up.end());
            down.insert(down.end(), blocks.back().down.begin(), blocks.back().down.end());
        }
        const std::vector<GgufTensorSpec> tensors = {
            {"blk.0.ffn_gate_inp.weight",
             0,
             {d, experts},
             std::vector<float>(std::size_t(d * experts), 1),
             ""},
            {"blk.0.ffn_gate_exps.weight", c.type, {d, f, experts}, gate, ""},
            {"blk.0.ffn_up_exps.weight", c.type, {d, f, experts}, up, ""},
            {"blk.0.ffn_down_exps.weight", c.type, {f, d, experts}, down, ""},
        };
        const std::string path = temp_dir() + "/moe.gguf";
        write_file(path, gguf_bytes(tensors));
        const std::vector<BlockInfo> found = list_blocks(path);
        REQUIRE(found.size() == std::size_t(experts));
        for (std::int64_t e = 0; e < experts; ++e) {
            CHECK(found[std::size_t(e)].scheme == "gguf-expert");
            CHECK(found[std::size_t(e)].layer == 0);
            CHECK(found[std::size_t(e)].expert == e);
            CHECK(found[std::size_t(e)].d == d);
            CHECK(found[std::size_t(e)].f == f);
        }
        const WeightSelector selector{0, "", 2};
        const LoadedWeights w = load_weights(path, selector);
        CHECK(w.expert == 2);
        CHECK(w.gate == stored_values(c.type, blocks[2].gate, d));
        CHECK(w.down == stored_values(c.type, blocks[2].down, f));
        check_forward(w, blocks[2], path, selector);
        CHECK_LOAD_FAILS(path, WeightSelector{},
                         "layer 0 holds 3 experts (\"blk.{N}.ffn_*_exps\" with E = 0, 1, 2): "
                         "choose one with the expert selector (--expert E)");
        CHECK_LOAD_FAILS(path, (WeightSelector{0, "", 3}),
                         "no SwiGLU block found in layer 0 with expert 3");
        CHECK_LOAD_FAILS(path, (WeightSelector{-1, "blk.0.", -1}),
                         "\"blk.0.\" holds a layer's experts stacked");
    }
    // Expert counts that disagree.
    const std::vector<GgufTensorSpec> bad = {
        {"blk.0.ffn_gate_exps.weight", 0, {4, 8, 2}, std::vector<float>(64, 1), ""},
        {"blk.0.ffn_up_exps.weight", 0, {4, 8, 3}, std::vector<float>(96, 1), ""},
        {"blk.0.ffn_down_exps.weight", 0, {8, 4, 2}, std::vector<float>(64, 1), ""},
    };
    const std::string path = temp_dir() + "/moe_bad.gguf";
    write_file(path, gguf_bytes(bad));
    CHECK_LOAD_FAILS(path, (WeightSelector{0, "", 1}),
                     "up \"blk.0.ffn_up_exps.weight\" [3, 8, 4] holds 3 experts, the gate 2");
}

TEST_CASE("version 2, another alignment, odd widths in F32") {
    Model m(0, 1, 7, 13);
    m.metadata.u32("general.alignment", 64);
    GgufOptions options;
    options.version = 2;
    options.alignment = 64;
    const std::string path = m.write(options);
    const GgufFile file = GgufFile::open(path);
    CHECK(file.version() == 2);
    CHECK(file.alignment() == 64);
    CHECK(file.strings().at("general.architecture") == "llama");
    // Scalars are kept with their type (an MoE layer's rule is made of them).
    REQUIRE(file.scalar("llama.block_count"));
    CHECK(file.scalar("llama.block_count")->is_integer());
    CHECK(file.scalar("llama.block_count")->value == 1);
    REQUIRE(file.scalar("llama.rope.freq_base"));
    CHECK(file.scalar("llama.rope.freq_base")->is_float());
    CHECK(file.scalar("llama.rope.freq_base")->value == 10000.0);
    CHECK(file.scalar("general.architecture") == nullptr);   // a string
    CHECK(file.scalar("tokenizer.ggml.tokens") == nullptr);  // an array
    const LoadedWeights w = load_weights(path);
    CHECK(w.gate == m.blocks[0].gate);
    check_forward(w, m.blocks[0], path, {});
}

TEST_CASE("a weight in a type the loader does not read is refused as unsupported") {
    Model m(0, 1, 32, 32);
    m.tensors[2].type = 3;  // Q4_1: 20 bytes per block of 32
    m.tensors[2].raw = std::string(32 * 20, '\0');
    const std::string path = m.write();
    const std::string message = error_message([&] { load_weights(path); }, Status::unsupported);
    CHECK(contains(message, "gate \"blk.0.ffn_gate.weight\" has unsupported dtype Q4_1"));
    // A type this reader does not know at all: the file opens, the tensor is never read.
    m.tensors[2].type = 23;
    m.tensors[2].raw = "x";
    const std::string unknown = m.write();
    CHECK(contains(error_message([&] { load_weights(unknown); }, Status::unsupported),
                   "has unsupported dtype ggml type 23"));
}

TEST_CASE("malformed files are refused, each with its message") {
    const Model m(0, 1, 4, 8);
    const std::string good = gguf_bytes(m.tensors, m.metadata);
    GgufFile::from_memory(good.data(), good.size());  // the base case opens

    const std::string header = "GGUF" + le32(3);
    struct Case {
        std::string bytes;
        const char* message;
    };
    // `n` tensor infos, padding to 32, then `data_bytes` of data.
    auto with_tensors = [&](std::uint64_t n, const std::string& infos, std::uint64_t data_bytes) {
        std::string s = header + le64(n) + le64(0) + infos;
        while (s.size() % 32) s += '\0';
        return s + std::string(data_bytes, '\0');
    };
    auto with_tensor = [&](const std::string& info, std::uint64_t data_bytes = 64) {
        return with_tensors(1, info, data_bytes);
    };
    auto info = [](const std::string& name, std::vector<std::uint64_t> ne, std::uint32_t type,
                   std::uint64_t offset) {
        std::string s = gguf_string(name) + le32(std::uint32_t(ne.size()));
        for (std::uint64_t n : ne) s += le64(n);
        return s + le32(type) + le64(offset);
    };
    const Case cases[] = {
        {"", "not a GGUF file"},
        {"GGUX" + le32(3) + le64(0) + le64(0), "not a GGUF file"},
        {"GGUF" + le32(1) + le64(0) + le64(0), "GGUF version 1"},
        {"GGUF" + le32(4) + le64(0) + le64(0), "GGUF version 4 is not supported"},
        {"GGUF" + le32(0x03000000) + le64(0) + le64(0), "big-endian"},
        {header, "the tensor count at offset 8 needs 8 bytes"},
        {header + le64(1ull << 40) + le64(0), "tensor count 1099511627776 cannot fit"},
        {header + le64(0) + le64(1ull << 40), "metadata count 1099511627776 cannot fit"},
        {header + le64(0) + le64(1) + le64(1000) + "0123456789",
         "a metadata key at offset 32 needs 1000 bytes, 10 are left"},
        {header + le64(0) + le64(1) + gguf_string("k") + le32(13) + le64(0), "value type 13"},
        {header + le64(0) + le64(1) + gguf_string("k") + le32(9) + le32(14) + le64(0),
         "an array of value type 14"},
        {header + le64(0) + le64(1) + gguf_string("k") + le32(9) + le32(4) + le64(1ull << 60),
         "array length"},
        {header + le64(0) + le64(2) + gguf_string("k") + le32(4) + le32(1) + gguf_string("k") +
             le32(4) + le32(1),
         "duplicate metadata key \"k\""},
        {header + le64(0) + le64(1) + gguf_string("general.alignment") + le32(4) + le32(48),
         "general.alignment is 48; it must be a power of two"},
        {header + le64(0) + le64(1) + gguf_string("general.alignment") + le32(10) + le64(32),
         "general.alignment has value type 10"},
        {with_tensor(info("t", {}, 0, 0)), "has 0 dimensions"},
        {with_tensor(info("t", {1, 1, 1, 1, 1}, 0, 0)), "has 5 dimensions"},
        {with_tensor(info("t", {1ull << 40, 1ull << 40}, 0, 0)), "product overflows 64 bits"},
        {with_tensor(info("t", {1ull << 63, 1}, 0, 0)), "product overflows 64 bits"},
        {with_tensor(info("t", {33, 2}, 8, 0)), "a row of 33 values is not a whole number of Q8_0"},
        // K-quants: rows of whole super-blocks of 256, every byte of them there.
        {with_tensor(info("blk.0.ffn_gate.weight", {288, 1}, 12, 0), 256),
         "tensor \"blk.0.ffn_gate.weight\": a row of 288 values is not a whole number of Q4_K "
         "blocks of 256"},
        {with_tensor(info("blk.0.ffn_up.weight", {100, 4}, 13, 0)),
         "tensor \"blk.0.ffn_up.weight\": a row of 100 values is not a whole number of Q5_K"},
        {with_tensor(info("blk.0.ffn_down.weight", {256, 2}, 14, 0), 300),
         "tensor \"blk.0.ffn_down.weight\": bytes [0, 420) of the data run past its end (300 "
         "bytes): the file is truncated"},
        {with_tensor(info("blk.0.ffn_down.weight", {512, 1}, 12, 0), 200),
         "tensor \"blk.0.ffn_down.weight\": bytes [0, 288) of the data run past its end"},
        {with_tensor(info("t", {4}, 0, 8)), "offset 8 is not a multiple of the alignment 32"},
        {with_tensor(info("t", {17}, 0, 0)), "run past its end (64 bytes)"},
        {with_tensor(info("t", {8}, 0, 0), 0), "run past its end (0 bytes): the file is truncated"},
        {with_tensors(2, info("a", {16}, 0, 0) + info("b", {4}, 0, 32), 128),
         "tensors \"a\" and \"b\" overlap"},
        {with_tensors(2, info("a", {4}, 0, 0) + info("a", {4}, 0, 32), 128),
         "duplicate tensor \"a\""},
    };
    for (const Case& c : cases) {
        const std::string message = gguf_error(c.bytes);
        INFO(message);
        CHECK(message.rfind("<gguf>: ", 0) == 0);
        CHECK(contains(message, c.message));
        CHECK(message.find('\n') == std::string::npos);
    }
    // Every truncation of a good file fails cleanly.
    for (std::size_t n = 0; n + 1 < good.size(); n += 7) {
        CAPTURE(n);
        gguf_error(good.substr(0, n));
    }
}

TEST_CASE("a tensor with a 0 dimension decodes to nothing, whatever the others") {
    // ne = [0, 2^40, 2^40]: the reader's product is 0; multiplied in the
    // reverse order it would overflow (fuzz_gguf found the loader doing so).
    GgufTensorSpec empty{"blk.0.ffn_gate.weight", 0, {0, 1ll << 40, 1ll << 40}, {}, ""};
    empty.raw = std::string();
    const std::string bytes = gguf_bytes({empty});
    const swiglu::detail::CheckpointFiles files =
        swiglu::detail::CheckpointFiles::single(GgufFile::from_memory(bytes.data(), bytes.size()));
    const auto t = files.find("blk.0.ffn_gate.weight");
    REQUIRE(t);
    CHECK(t->elements == 0);
    CHECK(files.to_f32(*t).empty());
}

TEST_CASE("arrays nest at most 8 deep") {
    std::string value = le32(4) + le64(0);  // the innermost: an empty array of u32
    for (int i = 0; i < 9; ++i) value = le32(9) + le64(1) + value;
    GgufMetadata meta;
    meta.raw("nested", 9, value);
    const std::string bytes = gguf_bytes({}, meta);
    CHECK(contains(gguf_error(bytes), "nests arrays deeper than 8"));
}

TEST_CASE("K-quant super-blocks with NaN or Inf scales load and run to NaN, as ggml's do") {
    // d = 256, f = 256; gate's first super-block gets a NaN d (Q4_K, Q5_K:
    // the f16 at byte 0; Q6_K: the f16 at byte 208), up's an Inf one.
    const std::int64_t d = 256, f = 256;
    const RandomBlock b(d, f, Layout::out_in, 7);
    for (const std::uint32_t type : {12u, 13u, 14u}) {
        CAPTURE(type);
        std::string gate = ggml_bytes(type, b.gate, d), up = ggml_bytes(type, b.up, d);
        const std::size_t at = type == 14 ? 208 : 0;
        gate.replace(at, 2, std::string("\x00\x7e", 2));  // f16 NaN
        up.replace(at, 2, std::string("\x00\x7c", 2));    // f16 +Inf
        const std::vector<GgufTensorSpec> tensors = {
            {"blk.0.ffn_gate.weight", type, {d, f}, b.gate, gate},
            {"blk.0.ffn_up.weight", type, {d, f}, b.up, up},
            {"blk.0.ffn_down.weight", type, {f, d}, b.down, ""}};
        const std::string path = temp_dir() + "/nan_scales.gguf";
        write_file(path, gguf_bytes(tensors));
        const LoadedWeights w = load_weights(path);
        CHECK(std::isnan(w.gate[0]));
        const std::vector<float> x = random_input(1, d, 3);
        for (bool stored : {true, false}) {
            Options o;
            o.threads = 1;
            o.keep_stored = stored;
            std::vector<float> y(x.size());
            load_ffn(path, {}, o).forward(x.data(), y.data(), 1);
            // gate row 0 is NaN: act and with it every y is NaN.
            for (float v : y) CHECK(std::isnan(v));
        }
    }
}
}
