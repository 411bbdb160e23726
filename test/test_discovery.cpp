// Finding blocks in whole checkpoints: under any prefix, in every scheme
// found in the wild (Meta/Mistral originals, Mixtral and Qwen-MoE experts,
// the seeds inside their models), listed in natural order, chosen by layer,
// expert or prefix, with messages that say what tells blocks apart.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>

#include "checkpoint_blocks.hpp"
#include "io/block_discovery.hpp"

using namespace swiglu;
using namespace swiglu::test;

namespace {

const Scheme kMixtral{"mixtral-expert", "", "w1.weight", "w3.weight", "w2.weight", Layout::out_in};
const Scheme kQwenMoe{"hf-moe-expert", "", "gate_proj.weight", "up_proj.weight", "down_proj.weight",
                      Layout::out_in};

// A block per prefix, each with its own weights; loads each by `select`
// and checks the block it got against the reference.
struct Model {
    std::vector<TensorSpec> tensors;
    std::vector<RandomBlock> blocks;
    std::vector<std::string> prefixes;

    void add(const Scheme& s, const std::string& prefix, std::int64_t d, std::int64_t f,
             const std::string& dtype = "F32") {
        blocks.emplace_back(d, f, s.layout, unsigned(40 + blocks.size()));
        append(tensors, block_tensors(s, blocks.back(), dtype, prefix.c_str()));
        prefixes.push_back(prefix);
    }
    // A tensor no scheme uses, as the rest of a model has them.
    void other(const std::string& name) { tensors.push_back({name, "F32", {2, 2}, {1, 2, 3, 4}}); }
};

void check_loads(const std::string& path, const WeightSelector& selector, const Model& m,
                 std::size_t block, const char* scheme) {
    CAPTURE(m.prefixes[block]);
    const LoadedWeights w = load_weights(path, selector);
    CHECK(w.prefix == m.prefixes[block]);
    CHECK(w.scheme == scheme);
    CHECK(w.gate == m.blocks[block].gate);
    CHECK(w.up == m.blocks[block].up);
    CHECK(w.down == m.blocks[block].down);
    check_forward(w, m.blocks[block], path, selector);
}

WeightSelector layer(std::int64_t n, std::int64_t expert = -1) { return {n, "", expert}; }
WeightSelector block(const std::string& prefix) { return {-1, prefix, -1}; }

}  // namespace

TEST_SUITE("discovery") {

TEST_CASE("layer and expert numbers, patterns and natural order") {
    using namespace swiglu::detail;
    CHECK(layer_of("model.layers.12.mlp.") == 12);
    CHECK(layer_of("layers.3.feed_forward.") == 3);
    CHECK(layer_of("blocks.0.ffn.") == 0);
    CHECK(layer_of("blk.31.") == 31);
    CHECK(layer_of("encoder.") == -1);
    CHECK(layer_of("model.layers.x.mlp.") == -1);
    CHECK(layer_of("layers.99999999999999999999.") == -1);  // no number that long
    CHECK(expert_of("model.layers.1.block_sparse_moe.experts.7.") == 7);
    CHECK(expert_of("model.layers.1.mlp.shared_expert.") == -1);
    CHECK(prefix_pattern("model.layers.1.mlp.experts.7.") == "model.layers.{N}.mlp.experts.{E}.");
    CHECK(natural_less("layers.2.", "layers.10."));
    CHECK(!natural_less("layers.10.", "layers.2."));
    CHECK(natural_less("a.", "a.0"));
    CHECK(natural_less("layers.02.", "layers.3."));
    CHECK(!natural_less("x", "x"));
}

TEST_CASE("a CyberSLM model: its blocks under blocks.N.ffn., chosen by layer") {
    Model m;
    for (int n = 0; n < 12; ++n) {
        m.other("blocks." + std::to_string(n) + ".attn.q_proj.weight");
        m.add(kCyberslm, "blocks." + std::to_string(n) + ".ffn.", 6, 10, "BF16");
    }
    m.other("tok_embeddings.weight");
    const std::string path = write_checkpoint(m.tensors);
    const std::vector<BlockInfo> found = list_blocks(path);
    REQUIRE(found.size() == 12);
    for (int n = 0; n < 12; ++n) {  // natural order: 2 before 10
        CHECK(found[std::size_t(n)].prefix == "blocks." + std::to_string(n) + ".ffn.");
        CHECK(found[std::size_t(n)].layer == n);
        CHECK(found[std::size_t(n)].expert == -1);
        CHECK(found[std::size_t(n)].scheme == "cyberslm");
        CHECK(found[std::size_t(n)].d == 6);
        CHECK(found[std::size_t(n)].f == 10);
        CHECK(found[std::size_t(n)].source_dtype == "BF16");
        CHECK(found[std::size_t(n)].problem.empty());
    }
    // BF16 rounding aside, each layer is its own block.
    for (int n : {0, 2, 10}) {
        const LoadedWeights w = load_weights(path, layer(n));
        CHECK(w.prefix == m.prefixes[std::size_t(n)]);
        CHECK(w.layer == n);
        CHECK(w.gate == rounded(m.blocks[std::size_t(n)].gate, "BF16"));
        check_forward(w, m.blocks[std::size_t(n)], path, layer(n));
    }
    CHECK_LOAD_FAILS(path, WeightSelector{},
                     "holds 12 layers (\"blocks.{N}.ffn\" with N = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, "
                     "10, 11): choose one with the layer selector (--layer N)");
}

TEST_CASE("Meta and Mistral originals: layers.N.feed_forward.w1/w3/w2") {
    Model m;
    for (int n = 0; n < 3; ++n) {
        m.other("layers." + std::to_string(n) + ".attention.wq.weight");
        m.add(kMeta, "layers." + std::to_string(n) + ".feed_forward.", 5, 9);
    }
    const std::string path = write_checkpoint(m.tensors);
    for (std::size_t n = 0; n < 3; ++n) check_loads(path, layer(std::int64_t(n)), m, n, "meta");
    check_loads(path, block("layers.1.feed_forward."), m, 1, "meta");
}

TEST_CASE("Mixtral experts: a layer and an expert choose one") {
    Model m;
    for (int n = 0; n < 2; ++n) {
        const std::string moe = "model.layers." + std::to_string(n) + ".block_sparse_moe.";
        m.other(moe + "gate.weight");  // the router: no block of its own
        for (int e = 0; e < 3; ++e)
            m.add(kMixtral, moe + "experts." + std::to_string(e) + ".", 4, 7);
    }
    const std::string path = write_checkpoint(m.tensors);
    CHECK(list_blocks(path).size() == 6);
    check_loads(path, layer(1, 2), m, 5, "mixtral-expert");
    check_loads(path, layer(0, 0), m, 0, "mixtral-expert");
    const LoadedWeights w = load_weights(path, layer(1, 2));
    CHECK(w.layer == 1);
    CHECK(w.expert == 2);
    CHECK_LOAD_FAILS(
        path, WeightSelector{},
        "holds 2 layers (\"model.layers.{N}.block_sparse_moe.experts.{E}\" with N = 0, "
        "1): choose one with the layer selector (--layer N), and an expert with the "
        "expert selector (--expert E)");
    CHECK_LOAD_FAILS(path, layer(1),
                     "layer 1 holds 3 experts (\"model.layers.{N}.block_sparse_moe.experts.{E}\" "
                     "with E = 0, 1, 2): choose one with the expert selector (--expert E)");
    CHECK_LOAD_FAILS(path, layer(1, 7), "no SwiGLU block found in layer 1 with expert 7. ");
    CHECK_LOAD_FAILS(path, layer(1, 7), "Blocks present: \"model.layers.0.block_sparse_moe.");
    CHECK_LOAD_FAILS(path, (WeightSelector{-1, "model.layers.1.", 2}),
                     "give an expert (2) or a prefix (\"model.layers.1.\"), not both");
}

TEST_CASE("Qwen-MoE experts beside a shared expert") {
    Model m;
    for (int e = 0; e < 2; ++e)
        m.add(kQwenMoe, "model.layers.0.mlp.experts." + std::to_string(e) + ".", 5, 3, "F16");
    m.add(kHfLlama, "model.layers.0.mlp.shared_expert.", 5, 8, "F16");
    const std::string path = write_checkpoint(m.tensors);
    CHECK_LOAD_FAILS(path, layer(0),
                     "layer 0 holds 2 experts (\"model.layers.{N}.mlp.experts.{E}\" with E = 0, 1) "
                     "and other blocks (\"model.layers.0.mlp.shared_expert.\"): choose one with "
                     "the expert selector (--expert E) or the block selector (--block PREFIX)");
    const LoadedWeights w = load_weights(path, layer(0, 1));
    CHECK(w.scheme == "hf-moe-expert");
    CHECK(w.source_dtype == "F16");
    CHECK(w.gate == rounded(m.blocks[1].gate, "F16"));
    const LoadedWeights shared = load_weights(path, block("model.layers.0.mlp.shared_expert."));
    CHECK(shared.f == 8);
    CHECK(shared.scheme == "bare");
}

TEST_CASE("glassllm's W1/W3/W2 inside a model, (in, out)") {
    Model m;
    m.add(kGlassllm, "layers.0.", 4, 10);
    m.add(kGlassllm, "layers.1.", 4, 10);
    const std::string path = write_checkpoint(m.tensors);
    check_loads(path, layer(1), m, 1, "glassllm");
    CHECK(load_weights(path, layer(1)).gate_layout == Layout::in_out);
}

TEST_CASE("blocks that share no pattern are told apart by prefix") {
    Model m;
    m.add(kBare, "encoder.", 3, 4);
    m.add(kCyberslm, "decoder.ffn.", 3, 5);
    const std::string path = write_checkpoint(m.tensors);
    CHECK_LOAD_FAILS(path, WeightSelector{},
                     "holds 2 SwiGLU blocks (\"decoder.ffn.\" cyberslm, \"encoder.\" bare): choose "
                     "one with the block selector (--block PREFIX)");
    check_loads(path, block("decoder.ffn."), m, 1, "cyberslm");
    check_loads(path, block("encoder."), m, 0, "bare");
}

TEST_CASE("a prefix need not end in a dot when given") {
    Model m;
    m.add(kBare, "ffn_", 3, 4);  // ffn_gate_proj.weight ...
    const std::string path = write_checkpoint(m.tensors);
    CHECK(list_blocks(path).empty());  // discovery needs a '.' before the names
    check_loads(path, block("ffn_"), m, 0, "bare");
}

TEST_CASE("a block that is nearly there is named with what it lacks") {
    Model m;
    m.add(kHfLlama, layer_prefix(0), 3, 4);
    m.add(kHfLlama, layer_prefix(1), 3, 4);
    m.tensors.pop_back();  // layer 1 has no down_proj
    const std::string path = write_checkpoint(m.tensors);
    check_loads(path, WeightSelector{}, m, 0, "hf-llama");  // the only complete block
    CHECK_LOAD_FAILS(path, layer(1),
                     "no SwiGLU block found in layer 1: tried hf-llama (missing "
                     "\"model.layers.1.mlp.down_proj.weight\")");
}

TEST_CASE("list_blocks says why a block would not load") {
    RandomBlock b(3, 4, Layout::out_in, 1);
    std::vector<TensorSpec> tensors = block_tensors(kHfLlama, b, "F32", "model.layers.0.mlp.");
    append(tensors, block_tensors(kHfLlama, b, "F32", "model.layers.1.mlp."));
    tensors[4].shape = {3, 4};  // layer 1's up, transposed
    append(tensors, block_tensors(kHfLlama, b, "F32", "model.layers.2.mlp."));
    tensors[6].dtype = "I32";  // layer 2's gate
    const std::string path = write_checkpoint(tensors);
    const std::vector<BlockInfo> found = list_blocks(path);
    REQUIRE(found.size() == 3);
    CHECK(found[0].problem.empty());
    CHECK(found[0].f == 4);
    CHECK(contains(found[1].problem, "shapes disagree: expected up "));
    CHECK(contains(found[2].problem, "has unsupported dtype I32"));
    CHECK(found[2].problem.find(path) == std::string::npos);  // the caller knows the file
}

TEST_CASE("names from a hostile file stay on one line in messages") {
    Model m;
    // JSON escapes in the header: the names hold a newline and a tab.
    m.add(kBare, "a\\nb.", 2, 3);
    m.add(kBare, "c\\td.", 2, 3);
    const std::string path = write_checkpoint(m.tensors);
    const std::string message = load_error(path);
    INFO(message);
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find('\t') == std::string::npos);
    CHECK(contains(message, "holds 2 SwiGLU blocks"));
}

}  // TEST_SUITE
