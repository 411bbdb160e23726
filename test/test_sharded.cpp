// Sharded Hugging Face checkpoints: model.safetensors.index.json and its
// shards, named by the index or by the folder; only the shards that hold the
// chosen block are mapped; and the index refused like any hostile file.
#include <doctest/doctest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>

#include "checkpoint_blocks.hpp"
#include "io/checkpoint_files.hpp"
#include "io/checkpoint_loader.hpp"

using namespace swiglu;
using namespace swiglu::test;
using swiglu::detail::CheckpointFiles;

namespace {

const std::int64_t kD = 6, kF = 11;

// Three layers over three shards, as transformers saves them: layers 0 and 1
// in the first (but layer 1's down in the second), layer 2 in the second,
// the embeddings alone in the third.
struct ShardedModel {
    std::string dir = temp_dir();
    std::vector<RandomBlock> blocks;
    std::string index_path = dir + "/model.safetensors.index.json";

    static std::string shard(int i) {
        return "model-0000" + std::to_string(i) + "-of-00003.safetensors";
    }

    ShardedModel() {
        std::vector<TensorSpec> shards[3];
        for (int layer = 0; layer < 3; ++layer) {
            blocks.emplace_back(kD, kF, Layout::out_in, unsigned(70 + layer));
            std::vector<TensorSpec> t =
                block_tensors(kHfLlama, blocks.back(), "BF16", layer_prefix(layer).c_str());
            const int home = layer < 2 ? 0 : 1;
            shards[home].push_back(t[0]);
            shards[home].push_back(t[1]);
            shards[layer == 1 ? 1 : home].push_back(t[2]);
        }
        shards[2].push_back(
            {"model.embed_tokens.weight", "F32", {2, kD}, std::vector<float>(2 * kD, 1)});
        std::string map;
        for (int i = 0; i < 3; ++i) {
            write_file(dir + "/" + shard(i + 1), safetensors_bytes(shards[i]));
            for (const TensorSpec& t : shards[i])
                map += (map.empty() ? "" : ", ") + ("\"" + t.name + "\": \"" + shard(i + 1) + "\"");
        }
        write_index("{\"metadata\": {\"total_size\": 1234}, \"weight_map\": {" + map + "}}");
    }
    void write_index(const std::string& text) const { write_file(index_path, text); }
};

void check_block(const LoadedWeights& w, const RandomBlock& b) {
    CHECK(w.gate == rounded(b.gate, "BF16"));
    CHECK(w.up == rounded(b.up, "BF16"));
    CHECK(w.down == rounded(b.down, "BF16"));
}

// The error opening `text` as an index throws.
std::string index_error(const std::string& text) {
    return error_message([&] { CheckpointFiles::from_index(text, "/nonexistent", "<index>"); });
}

}  // namespace

TEST_SUITE("sharded") {

TEST_CASE("the index or its folder: each layer loads, mapping only its shards") {
    const ShardedModel m;
    for (const std::string& path : {m.index_path, m.dir}) {
        CAPTURE(path);
        for (int layer = 0; layer < 3; ++layer) {
            const WeightSelector selector{layer, "", -1};
            const LoadedWeights w = load_weights(path, selector);
            CHECK(w.scheme == "hf-llama");
            CHECK(w.source_dtype == "BF16");
            check_block(w, m.blocks[std::size_t(layer)]);
            check_forward(w, m.blocks[std::size_t(layer)], path, selector);
        }
    }
    // Layer 0 lives in shard 1; layer 1 in shards 1 and 2; the embeddings'
    // shard is never mapped.
    const std::size_t expected_mapped[] = {1, 2, 1};
    for (int layer = 0; layer < 3; ++layer) {
        const CheckpointFiles files = CheckpointFiles::open(m.index_path);
        CHECK(files.sharded());
        CHECK(files.shards() == 3);
        detail::load_weights(files, WeightSelector{layer, "", -1});
        CHECK(files.shards_mapped() == expected_mapped[layer]);
    }
    const std::vector<BlockInfo> found = list_blocks(m.dir);
    REQUIRE(found.size() == 3);
    CHECK(found[2].prefix == layer_prefix(2));
    CHECK(found[2].d == kD);
    CHECK_LOAD_FAILS(m.index_path, WeightSelector{}, "holds 3 layers");
    CHECK_LOAD_FAILS(m.index_path, (WeightSelector{7, "", -1}),
                     "no SwiGLU block found in layer 7. Layers present: 0, 1, 2.");
    // Messages list a sharded checkpoint's tensors by name, without mapping
    // a shard for their shapes.
    CHECK(detail::CheckpointFiles::open(m.index_path).tensors_text() ==
          "tensors present (10, in 3 shards): \"model.embed_tokens.weight\", "
          "\"model.layers.0.mlp.down_proj.weight\", \"model.layers.0.mlp.gate_proj.weight\", "
          "\"model.layers.0.mlp.up_proj.weight\", \"model.layers.1.mlp.down_proj.weight\", "
          "\"model.layers.1.mlp.gate_proj.weight\", \"model.layers.1.mlp.up_proj.weight\", "
          "\"model.layers.2.mlp.down_proj.weight\", ... and 2 more");
}

TEST_CASE("a missing shard fails only the blocks it holds, naming it") {
    const ShardedModel m;
    REQUIRE(::unlink((m.dir + "/" + ShardedModel::shard(2)).c_str()) == 0);
    check_block(load_weights(m.index_path, {0, "", -1}), m.blocks[0]);
    CHECK_LOAD_FAILS(m.index_path, (WeightSelector{2, "", -1}),
                     "shard \"model-00002-of-00003.safetensors\" (of tensor "
                     "\"model.layers.2.mlp.gate_proj.weight\"): " +
                         m.dir + "/model-00002-of-00003.safetensors: cannot open: No such file");
    // list_blocks says so per block.
    const std::vector<BlockInfo> found = list_blocks(m.index_path);
    REQUIRE(found.size() == 3);
    CHECK(found[0].problem.empty());
    CHECK(contains(found[1].problem, "cannot open"));
}

TEST_CASE("a shard whose name holds a newline fails on one line") {
    // fuzz_index found it: the path built from the name reached the message
    // as it was.
    const CheckpointFiles files = CheckpointFiles::from_index(
        R"({"weight_map": {"a.weight": "shard\nx.safetensors"}})", "/nonexistent", "<index>");
    const std::string m = error_message([&] { files.find("a.weight"); });
    CHECK(m.find('\n') == std::string::npos);
    CHECK(contains(m, "/nonexistent/shard\\nx.safetensors: cannot open"));
    // A path given with one, the same.
    const std::string given =
        error_message([] { CheckpointFiles::open("/nonexistent/a\nb.safetensors"); });
    CHECK(given.find('\n') == std::string::npos);
    CHECK(contains(given, "/nonexistent/a\\nb.safetensors: cannot open"));
}

TEST_CASE("a folder holds an index, a single file, or neither") {
    const std::string dir = temp_dir();
    const RandomBlock b(kD, kF, Layout::out_in, 3);
    write_file(dir + "/notes.txt", "not a checkpoint");
    CHECK_LOAD_FAILS(dir, WeightSelector{},
                     "a folder with neither model.safetensors.index.json nor model.safetensors");
    write_file(dir + "/model.safetensors", safetensors_bytes(block_tensors(kBare, b, "F32")));
    CHECK(load_weights(dir).gate == b.gate);
}

TEST_CASE("an index is refused with a message for each defect") {
    struct Case {
        const char* text;
        const char* message;
    };
    const Case cases[] = {
        {"", "index is empty"},
        {"{\"weight_map\": {", "index is not valid JSON"},
        {"[]", "index must be a JSON object, found array"},
        {"{\"metadata\": {}}", "index has no weight_map"},
        {"{\"weight_map\": [\"a.safetensors\"]}", "weight_map must be an object, found array"},
        {"{\"weight_map\": {\"w\": 3}}", "weight_map maps tensor \"w\" to a number"},
        {"{\"weight_map\": {\"w\": \"a.safetensors\", \"w\": \"b.safetensors\"}}",
         "tensor \"w\" is mapped twice in weight_map"},
        {"{\"weight_map\": {}, \"weight_map\": {}}", "duplicate key \"weight_map\" in the index"},
        {"{\"metadata\": {\"k\": 1, \"k\": 2}, \"weight_map\": {}}",
         "duplicate key \"k\" inside \"metadata\""},
        {"{\"metadata\": [[[[[[[[[[]]]]]]]]]], \"weight_map\": {}}",
         "index nests deeper than 8 levels"},
        {"{\"weight_map\": {\"w\": \"../a.safetensors\"}}",
         "to \"../a.safetensors\", which is not a file name in the index's folder"},
        {"{\"weight_map\": {\"w\": \"/etc/passwd\"}}", "which is not a file name"},
        {"{\"weight_map\": {\"w\": \"\"}}", "which is not a file name"},
        {"{\"weight_map\": {\"w\": \"..\"}}", "which is not a file name"},
        {"{\"weight_map\": {\"w\": \"a\\u0000b\"}}", "which is not a file name"},
    };
    for (const Case& c : cases) {
        const std::string message = index_error(c.text);
        INFO(std::string(c.text) << " -> " << message);
        CHECK(message.rfind("<index>: ", 0) == 0);
        CHECK(contains(message, c.message));
    }
    CHECK(
        contains(index_error(std::string("{\"weight_map\": {}}\0", 19)), "NUL byte at offset 18"));
}

TEST_CASE("a shard must hold what the index maps to it") {
    const ShardedModel m;
    // Layer 2's gate mapped to the first shard, which does not hold it.
    m.write_index("{\"weight_map\": {\"model.layers.2.mlp.gate_proj.weight\": \"" +
                  ShardedModel::shard(1) + "\", \"model.layers.2.mlp.up_proj.weight\": \"" +
                  ShardedModel::shard(2) + "\", \"model.layers.2.mlp.down_proj.weight\": \"" +
                  ShardedModel::shard(2) + "\"}}");
    CHECK_LOAD_FAILS(m.index_path, WeightSelector{},
                     "weight_map maps tensor \"model.layers.2.mlp.gate_proj.weight\" to shard "
                     "\"model-00001-of-00003.safetensors\", which does not hold it");
}

}  // TEST_SUITE
