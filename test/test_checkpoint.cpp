// Loading the block from checkpoints: every naming scheme in every dtype round
// trips and runs like the fp64 reference; selection by layer and prefix; and
// the errors for missing, misshapen and unconvertible weights.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "checkpoint_blocks.hpp"
#include "io/checkpoint_loader.hpp"
#include "io/safetensors.hpp"

using namespace swiglu;
using namespace swiglu::test;
namespace t = swiglu::test;

namespace {

std::string write(const std::vector<TensorSpec>& tensors, const std::string& metadata = "") {
    return t::write_checkpoint(tensors, metadata);
}

}  // namespace

TEST_SUITE("checkpoint") {

TEST_CASE("every scheme in every dtype round trips and matches the reference") {
    const std::int64_t shapes[][2] = {{7, 13}, {1, 1}};
    int checked = 0;
    for (const Scheme& s : kSchemes) {
        for (const std::string dtype : {"F32", "BF16", "F16"}) {
            for (const auto& shape : shapes) {
                const std::int64_t d = shape[0], f = shape[1];
                CAPTURE(s.name);
                CAPTURE(dtype);
                CAPTURE(d);
                RandomBlock b(d, f, s.layout, 7 + checked);
                const std::string path = write(block_tensors(s, b, dtype));
                const LoadedWeights w = load_weights(path);
                CHECK(w.scheme == s.name);
                CHECK(w.d == d);
                CHECK(w.f == f);
                CHECK(w.gate_name == std::string(s.prefix) + s.gate);
                CHECK(w.up_name == std::string(s.prefix) + (s.up ? s.up : s.gate));
                CHECK(w.down_name == std::string(s.prefix) + s.down);
                CHECK(w.source_dtype == dtype);
                CHECK(w.gate_layout == s.layout);
                CHECK(w.up_layout == s.layout);
                CHECK(w.down_layout == s.layout);
                // Exact: F32 as written, BF16/F16 as the writer rounded them.
                CHECK(w.gate == t::rounded(b.gate, dtype));
                CHECK(w.up == t::rounded(b.up, dtype));
                CHECK(w.down == t::rounded(b.down, dtype));
                const WeightView g = w.gate_view();
                CHECK(g.in_features() == d);
                CHECK(g.out_features() == f);
                CHECK(w.down_view().in_features() == f);
                CHECK(w.down_view().out_features() == d);
                check_forward(w, b, path, {});
                ++checked;
            }
        }
    }
    CHECK(checked == 7 * 3 * 2);
}

TEST_CASE("a multi-layer file needs a layer, and the layer picks the block") {
    const std::int64_t d = 7, f = 13;
    std::vector<TensorSpec> tensors;
    std::vector<RandomBlock> blocks;
    for (int layer = 0; layer < 3; ++layer) {
        blocks.emplace_back(d, f, Layout::out_in, 100 + layer);
        const std::string attention =
            "model.layers." + std::to_string(layer) + ".self_attn.q_proj.weight";
        tensors.push_back({attention, "F32", {d, d}, std::vector<float>(d * d, 0.5f)});
        append(tensors,
               block_tensors(kHfLlama, blocks.back(), "BF16", layer_prefix(layer).c_str()));
    }
    const std::string path = write(tensors);
    CHECK_LOAD_FAILS(path, WeightSelector{},
                     "holds 3 layers (\"model.layers.{N}.mlp\" with N = 0, 1, 2): choose one "
                     "with the layer selector (--layer N)");
    for (int layer = 0; layer < 3; ++layer) {
        const WeightSelector selector{layer, ""};
        const LoadedWeights w = load_weights(path, selector);
        CHECK(w.scheme == "hf-llama");
        CHECK(w.gate_name == "model.layers." + std::to_string(layer) + ".mlp.gate_proj.weight");
        CHECK(w.gate == t::rounded(blocks[layer].gate, "BF16"));
        CHECK(w.down == t::rounded(blocks[layer].down, "BF16"));
        check_forward(w, blocks[layer], path, selector);
    }
    // The layers to choose from, and no list of tensors beside them.
    CHECK_LOAD_FAILS(path, (WeightSelector{5, ""}),
                     "no SwiGLU block found in layer 5. Layers present: 0, 1, 2.");
    CHECK(!contains(load_error(path, WeightSelector{5, ""}), "tensors present"));
}

TEST_CASE("phi3-merged layers are selected the same way") {
    const std::int64_t d = 5, f = 6;
    RandomBlock b0(d, f, Layout::out_in, 1), b1(d, f, Layout::out_in, 2);
    std::vector<TensorSpec> tensors = block_tensors(kPhi3, b0, "F16");
    append(tensors, block_tensors(kPhi3, b1, "F16", layer_prefix(1).c_str()));
    const std::string path = write(tensors);
    CHECK_LOAD_FAILS(path, WeightSelector{}, "holds 2 layers");
    const LoadedWeights w = load_weights(path, {1, ""});
    CHECK(w.scheme == "phi3-merged");
    CHECK(w.gate == t::rounded(b1.gate, "F16"));
    CHECK(w.up == t::rounded(b1.up, "F16"));
}

TEST_CASE("a prefix selects the block in any scheme") {
    const std::int64_t d = 6, f = 10;
    RandomBlock hf(d, f, Layout::out_in, 1), glass(d, f, Layout::in_out, 2),
        cyber(d, f, Layout::out_in, 3), bare(d, f, Layout::out_in, 4),
        cyber_bare(d, f, Layout::out_in, 5);
    std::vector<TensorSpec> tensors;
    append(tensors, block_tensors(kHfLlama, hf, "F32", "model.layers.3.mlp."));
    append(tensors, block_tensors(kGlassllm, glass, "BF16", "blocks.0.ffn."));
    append(tensors, block_tensors(kCyberslm, cyber, "F16", "blocks.1.ffn."));
    append(tensors, block_tensors(kBare, bare, "F32", "encoder."));
    append(tensors, block_tensors(kCyberslmBare, cyber_bare, "BF16", "blocks.2.ffn."));
    const std::string path = write(tensors);

    struct Case {
        const char* prefix;
        const char* scheme;
        const RandomBlock* block;
        const char* dtype;
    };
    const Case cases[] = {
        {"model.layers.3.mlp.", "hf-llama", &hf, "F32"},
        {"blocks.0.ffn.", "glassllm", &glass, "BF16"},
        {"blocks.1.ffn.", "cyberslm", &cyber, "F16"},
        {"encoder.", "bare", &bare, "F32"},
        {"blocks.2.ffn.", "cyberslm", &cyber_bare, "BF16"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.prefix);
        const WeightSelector selector{-1, c.prefix};
        const LoadedWeights w = load_weights(path, selector);
        CHECK(w.scheme == c.scheme);
        CHECK(w.gate_name.compare(0, std::strlen(c.prefix), c.prefix) == 0);
        // The module's name, without the trailing '.', names the same block.
        const std::string module(c.prefix, std::strlen(c.prefix) - 1);
        const LoadedWeights by_module = load_weights(path, {-1, module});
        CHECK(by_module.gate_name == w.gate_name);
        CHECK(by_module.down_name == w.down_name);
        CHECK(by_module.gate == w.gate);
        CHECK(w.gate == t::rounded(c.block->gate, c.dtype));
        CHECK(w.up == t::rounded(c.block->up, c.dtype));
        CHECK(w.down == t::rounded(c.block->down, c.dtype));
        check_forward(w, *c.block, path, selector);
    }
    CHECK_LOAD_FAILS(
        path, (WeightSelector{-1, "blocks.9."}),
        "no SwiGLU block at \"blocks.9.\": tried bare, phi3-merged, cyberslm, cyberslm without "
        ".weight, glassllm, meta, gguf, gguf-expert (no tensor of theirs at \"blocks.9.\", e.g. "
        "\"blocks.9.gate_proj.weight\"). Blocks present: \"blocks.0.ffn.\", \"blocks.1.ffn.\", "
        "\"blocks.2.ffn.\", \"encoder.\", \"model.layers.3.mlp.\".");
    // Without the trailing '.', a failure is told at the prefix with it.
    CHECK_LOAD_FAILS(path, (WeightSelector{-1, "blocks.9"}), "no SwiGLU block at \"blocks.9.\"");
    CHECK_LOAD_FAILS(path, (WeightSelector{3, "blocks.0.ffn."}),
                     "give a layer (3) or a prefix (\"blocks.0.ffn.\"), not both");
}

TEST_CASE("__metadata__ is skipped") {
    RandomBlock b(7, 13, Layout::out_in, 5);
    const std::string path = write(block_tensors(kHfLlama, b, "BF16"), R"({"format":"pt"})");
    const LoadedWeights w = load_weights(path);
    CHECK(w.scheme == "hf-llama");
    CHECK(w.gate == t::rounded(b.gate, "BF16"));
}

TEST_CASE("unaligned tensors load: odd offsets from a 3-byte tensor and an odd-length BF16 one") {
    const std::int64_t d = 3, f = 5;  // 15 elements: odd
    RandomBlock b(d, f, Layout::in_out, 9);
    std::vector<t::RawTensor> tensors = {{"pad", "U8", {3}, "abc"}};
    for (const TensorSpec& spec : block_tensors(kGlassllm, b, "BF16"))
        tensors.push_back({spec.name, spec.dtype, spec.shape, t::tensor_bytes(spec)});
    // An F32 last, at an offset that is 3 mod 4.
    tensors.back() = {"W2", "F32", {f, d}, t::tensor_bytes({"", "F32", {}, b.down})};
    const std::string path = t::temp_dir() + "/odd.safetensors";
    t::write_file(path, t::safetensors_bytes_raw(tensors));
    const LoadedWeights w = load_weights(path);
    CHECK(w.scheme == "glassllm");
    CHECK(w.source_dtype == "mixed (gate BF16, up BF16, down F32)");
    CHECK(w.gate == t::rounded(b.gate, "BF16"));
    CHECK(w.up == t::rounded(b.up, "BF16"));
    CHECK(w.down == b.down);
    check_forward(w, b, path, {});
}

TEST_CASE("mixed dtypes load, each converted") {
    RandomBlock b(7, 13, Layout::out_in, 12);
    std::vector<TensorSpec> tensors = block_tensors(kBare, b, "F32");
    tensors[0].dtype = "BF16";
    tensors[1].dtype = "F16";
    const LoadedWeights w = load_weights(write(tensors));
    CHECK(w.source_dtype == "mixed (gate BF16, up F16, down F32)");
    CHECK(w.gate == t::rounded(b.gate, "BF16"));
    CHECK(w.up == t::rounded(b.up, "F16"));
    CHECK(w.down == b.down);
}

TEST_CASE("an opened file (from memory) loads the same") {
    RandomBlock b(4, 6, Layout::out_in, 13);
    const std::string bytes = t::safetensors_bytes(block_tensors(kCyberslm, b, "F32"));
    const auto file = detail::SafetensorsFile::from_memory(bytes.data(), bytes.size());
    const LoadedWeights w = detail::load_weights(file, {});
    CHECK(w.scheme == "cyberslm");
    CHECK(w.gate == b.gate);
}

TEST_CASE("errors: a weight missing") {
    RandomBlock b(7, 13, Layout::out_in, 1);
    std::vector<TensorSpec> tensors = block_tensors(kHfLlama, b, "F32");
    tensors.pop_back();  // no down_proj
    const std::string path = write(tensors);
    CHECK_LOAD_FAILS(
        path, WeightSelector{},
        "no SwiGLU block found: tried hf-llama (missing \"model.layers.0.mlp.down_proj.weight\")");
    CHECK_LOAD_FAILS(path, WeightSelector{},
                     "tensors present (2): \"model.layers.0.mlp.gate_proj.weight\" [13, 7] F32, "
                     "\"model.layers.0.mlp.up_proj.weight\" [13, 7] F32");
}

TEST_CASE("errors: no block at all lists the tensors present, first 8") {
    std::vector<TensorSpec> tensors;
    for (int i = 0; i < 25; ++i) tensors.push_back({"t" + std::to_string(i), "F32", {1}, {1.0f}});
    const std::string path = write(tensors);
    CHECK_LOAD_FAILS(path, WeightSelector{},
                     "no SwiGLU block found: tried bare, phi3-merged, cyberslm, cyberslm without "
                     ".weight, glassllm, meta, gguf, gguf-expert (no tensor of theirs at the top "
                     "level, e.g. \"gate_proj.weight\"). tensors present (25): \"t0\" [1] F32");
    const std::string message = load_error(path);
    CHECK(contains(message, "\"t7\" [1] F32, ... and 17 more"));
    CHECK(!contains(message, "\"t8\""));
    CHECK(message.size() < 400);
    CHECK_LOAD_FAILS(write({}), WeightSelector{}, "tensors present (0): none");
}

TEST_CASE("errors: a prefix with no block lists the tensors nearest it, and a few") {
    // 80 layers of attention, no SwiGLU block: the message lists the
    // tensors that share most of the prefix, then counts the rest.
    std::vector<TensorSpec> tensors;
    for (int i = 0; i < 80; ++i)
        for (const char* name : {"q_proj.weight", "k_proj.weight"})
            tensors.push_back(
                {"model.layers." + std::to_string(i) + ".self_attn." + name, "F32", {1}, {1.0f}});
    const std::string path = write(tensors);
    const std::string message = load_error(path, WeightSelector{-1, "model.layers.41.mlp"});
    CHECK(contains(message, "no SwiGLU block at \"model.layers.41.mlp.\""));
    CHECK(contains(message,
                   "tensors present (160), nearest \"model.layers.41.mlp.\" first: "
                   "\"model.layers.41.self_attn.q_proj.weight\" [1] F32, "
                   "\"model.layers.41.self_attn.k_proj.weight\" [1] F32, "));
    CHECK(contains(message, "... and 152 more"));
    CHECK(message.size() < 900);
}

TEST_CASE("errors: shapes that disagree") {
    RandomBlock b(7, 13, Layout::out_in, 1);
    std::vector<TensorSpec> up_wrong = block_tensors(kHfLlama, b, "F32");
    up_wrong[1].shape = {7, 13};  // transposed
    CHECK_LOAD_FAILS(
        write(up_wrong), WeightSelector{},
        "shapes disagree: expected up \"model.layers.0.mlp.up_proj.weight\" to be [f, d] = [13, 7] "
        "(from gate \"model.layers.0.mlp.gate_proj.weight\" [13, 7] as [f, d]), found [7, 13]");
    std::vector<TensorSpec> down_wrong = block_tensors(kCyberslm, b, "F32");
    down_wrong[2] = {"out_proj.weight", "F32", {7, 12}, std::vector<float>(84, 0.0f)};
    CHECK_LOAD_FAILS(write(down_wrong), WeightSelector{},
                     "expected down \"out_proj.weight\" to be [d, f] = [7, 13] (from gate "
                     "\"gate_proj.weight\" [13, 7] as [f, d]), found [7, 12]");
    RandomBlock g(7, 13, Layout::in_out, 1);
    std::vector<TensorSpec> glass = block_tensors(kGlassllm, g, "F32");
    glass[2].shape = {7, 13};  // W2 must be (f, d)
    CHECK_LOAD_FAILS(
        write(glass), WeightSelector{},
        "expected down \"W2\" to be [f, d] = [13, 7] (from gate \"W1\" [7, 13] as [d, f]), found "
        "[7, 13]");
    std::vector<TensorSpec> merged = block_tensors(kPhi3, b, "F32");
    merged[0] = {
        "model.layers.0.mlp.gate_up_proj.weight", "F32", {13, 7}, std::vector<float>(91, 0.0f)};
    CHECK_LOAD_FAILS(write(merged), WeightSelector{},
                     "gate_up \"model.layers.0.mlp.gate_up_proj.weight\" [13, 7] must have an even "
                     "number of rows");
}

TEST_CASE("errors: weights that are not 2-D") {
    RandomBlock b(7, 13, Layout::out_in, 1);
    std::vector<TensorSpec> one_d = block_tensors(kBare, b, "F32");
    one_d[0].shape = {91};
    CHECK_LOAD_FAILS(write(one_d), WeightSelector{},
                     "gate \"gate_proj.weight\" must be 2-D, found shape [91] (1-D)");
    std::vector<TensorSpec> three_d = block_tensors(kBare, b, "F32");
    three_d[2].shape = {1, 7, 13};
    CHECK_LOAD_FAILS(write(three_d), WeightSelector{},
                     "down \"down_proj.weight\" must be 2-D, found shape [1, 7, 13] (3-D)");
}

TEST_CASE("errors: an empty block") {
    const std::string path = write({{"gate_proj.weight", "F32", {0, 7}, {}},
                                    {"up_proj.weight", "F32", {0, 7}, {}},
                                    {"down_proj.weight", "F32", {7, 0}, {}}});
    CHECK_LOAD_FAILS(path, WeightSelector{}, "empty block: d = 7, f = 0");
}

TEST_CASE("errors: a weight in a dtype that does not convert to f32") {
    RandomBlock b(7, 13, Layout::out_in, 1);
    std::vector<TensorSpec> tensors = block_tensors(kHfLlama, b, "F32");
    tensors[1].dtype = "I32";  // the writer stores 4 zero bytes per element
    const std::string path = write(tensors);
    const std::string message = load_error(path, {}, Status::unsupported);
    INFO(message);
    CHECK(contains(message,
                   path + ": up \"model.layers.0.mlp.up_proj.weight\" has unsupported dtype I32; "
                          "weights must be F32, BF16 or F16"));
}

TEST_CASE("errors: a malformed or missing file names the file") {
    const std::string dir = t::temp_dir();
    t::write_file(dir + "/bad.safetensors", t::safetensors_raw(5, "{}", ""));
    CHECK_LOAD_FAILS(dir + "/bad.safetensors", WeightSelector{},
                     "header length 5 runs past the end of the file");
    CHECK_LOAD_FAILS(dir + "/none.safetensors", WeightSelector{},
                     "cannot open: No such file or directory");
    CHECK_THROWS_WITH_AS(load_ffn(dir + "/none.safetensors"), doctest::Contains("none.safetensors"),
                         Error);
}

TEST_CASE("load_ffn packs straight from the file: the same bits as from an f32 copy") {
    // Every scheme (layouts, the merged gate_up) and stored dtype, into
    // every precision this CPU runs.
    const std::int64_t d = 64, f = 40;  // q8_0 / q4_0 want whole blocks of d
    const std::vector<float> x = t::random_input(5, d, 3);
    for (const Scheme& s : kSchemes)
        for (const std::string dtype : {"F32", "BF16", "F16"}) {
            const RandomBlock b(d, f, s.layout, 5);
            const std::string path = write(block_tensors(s, b, dtype));
            const LoadedWeights w = load_weights(path);
            for (Dtype target : kDtypes) {
                CAPTURE(s.name);
                CAPTURE(dtype);
                CAPTURE(dtype_name(target));
                const Options options{1, target};
                std::vector<float> direct(x.size()), copied(x.size());
                try {
                    load_ffn(path, {}, options).forward(x.data(), direct.data(), 5);
                } catch (const Error& e) {
                    CHECK(e.status() == Status::unsupported);  // int8 without VNNI
                    continue;
                }
                Ffn(w.gate_view(), w.up_view(), w.down_view(), options)
                    .forward(x.data(), copied.data(), 5);
                CHECK(direct == copied);
            }
        }
}

TEST_CASE("load_ffn passes the options on") {
    RandomBlock b(7, 13, Layout::out_in, 3);
    const Ffn ffn = load_ffn(write(block_tensors(kHfLlama, b, "F32")), {}, Options{1});
    CHECK(ffn.threads() == 1);
    CHECK(ffn.d() == 7);
    CHECK(ffn.f() == 13);
}

}  // TEST_SUITE
