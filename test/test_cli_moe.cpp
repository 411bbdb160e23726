// The `swiglu` command on Mixture-of-Experts layers, run as a real process:
// `run --layer N` runs the whole layer (router, chosen experts, shared
// block) bit for bit as the library's MoeLayer does, `--expert E` still one
// expert; `info` shows the layer's rule, router, experts and shared block;
// a bad config fails with one line naming the key and the config.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <swiglu/moe_checkpoint.hpp>

#include "cli/npy.hpp"
#include "moe_files.hpp"
#include "process.hpp"
#include "reference.hpp"

using namespace swiglu;
using namespace swiglu::test;

namespace {

constexpr std::int64_t kD = 13, kF = 10;

ProcessResult swiglu_cli(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {SWIGLU_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv);
}

bool has(const ProcessResult& r, const std::string& needle) {
    return r.out.find(needle) != std::string::npos;
}

// A Mixtral-style model: a dense layer 0, a MoE layer 1 of 4 experts, k = 2.
struct Mixtral {
    std::string dir = temp_dir();
    std::string weights = dir + "/model.safetensors";
    std::string x_path = dir + "/x.npy", y_path = dir + "/y.npy";
    MoeWeights moe{kD, kF, 4, 0, 7};
    RandomBlock dense{kD, 17, Layout::out_in, 3};
    std::vector<float> x = random_input(6, kD, 9);

    Mixtral() {
        std::vector<TensorSpec> t = {
            {"model.layers.0.mlp.gate_proj.weight", "F32", {17, kD}, dense.gate},
            {"model.layers.0.mlp.up_proj.weight", "F32", {17, kD}, dense.up},
            {"model.layers.0.mlp.down_proj.weight", "F32", {kD, 17}, dense.down}};
        for (const TensorSpec& s : hf_moe_tensors(moe, kMixtralNames, 1, "F32")) t.push_back(s);
        write_file(weights, safetensors_bytes(t));
        config(R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2})");
        write_file(x_path, detail::npy_bytes(x.data(), {2, 3, kD}));
    }
    void config(const std::string& text) const { write_file(dir + "/config.json", text); }
    std::vector<std::string> run(std::vector<std::string> more) const {
        std::vector<std::string> args = {"run",  "--weights", weights, "--input",
                                         x_path, "--output",  y_path};
        args.insert(args.end(), more.begin(), more.end());
        return args;
    }
};

// y as the layer built from the same arrays gives it.
std::vector<float> expected(const MoeLayer& layer, const std::vector<float>& x, std::int64_t d) {
    std::vector<float> y(x.size());
    layer.forward(x.data(), y.data(), std::int64_t(x.size()) / d);
    return y;
}
std::vector<float> expected(const RandomBlock& b, const std::vector<float>& x) {
    std::vector<float> y(x.size());
    Ffn(b.gate_view(), b.up_view(), b.down_view())
        .forward(x.data(), y.data(), std::int64_t(x.size()) / b.d);
    return y;
}

std::string write_gguf(const MoeWeights& m, bool shared, bool gate, bool bias,
                       const GgufMetadata& meta) {
    const std::string path = temp_dir() + "/model.gguf";
    write_file(path, gguf_bytes(gguf_moe_tensors(m, 0, 0, 0, shared, gate, bias), meta));
    return path;
}

GgufMetadata metadata(const std::string& arch, std::int64_t experts, std::int64_t k) {
    GgufMetadata meta;
    meta.string("general.architecture", arch);
    meta.u32(arch + ".expert_count", std::uint32_t(experts));
    meta.u32(arch + ".expert_used_count", std::uint32_t(k));
    return meta;
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("run --layer N runs a whole MoE layer; --expert E still one expert") {
    const Mixtral m;
    RouterRule rule;
    rule.top_k = 2;
    rule.normalize = true;
    ProcessResult r = swiglu_cli(m.run({"--layer", "1"}));
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    const detail::NpyArray y = detail::read_npy(m.y_path);
    CHECK(y.shape == std::vector<std::int64_t>{2, 3, kD});
    CHECK(y.data == expected(m.moe.layer(rule, false, false, false), m.x, kD));
    // Any thread count, the same bits.
    r = swiglu_cli(m.run({"--layer", "1", "--threads", "1"}));
    REQUIRE(r.status == 0);
    CHECK(detail::read_npy(m.y_path).data == y.data);

    // Expert 2 alone, and the dense layer 0, as before.
    r = swiglu_cli(m.run({"--layer", "1", "--expert", "2"}));
    REQUIRE(r.status == 0);
    CHECK(detail::read_npy(m.y_path).data == expected(m.moe.experts[2], m.x));
    r = swiglu_cli(m.run({"--layer", "0"}));
    REQUIRE(r.status == 0);
    CHECK(detail::read_npy(m.y_path).data == expected(m.dense, m.x));

    // --trace is one block's: refused for a whole layer, y untouched.
    const std::string before = slurp(m.y_path);
    r = swiglu_cli(m.run({"--layer", "1", "--trace", m.dir + "/trace"}));
    CHECK(r.status == 2);
    CHECK(r.err.find("layer 1 is a Mixture-of-Experts layer: trace one of its experts with "
                     "--expert E") != std::string::npos);
    CHECK(slurp(m.y_path) == before);

    // A bad config: one line naming the key and the config's path, y untouched.
    m.config(R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 7})");
    r = swiglu_cli(m.run({"--layer", "1"}));
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(m.dir + "/config.json: \"num_experts_per_tok\" = 7 must be from 1 to "
                             "\"num_local_experts\" = 4") != std::string::npos);
    CHECK(slurp(m.y_path) == before);
}

TEST_CASE("info on a MoE layer: its rule, router, experts, what they run as") {
    const Mixtral m;
    ProcessResult r = swiglu_cli({"info", "--weights", m.weights});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r, "moe layers: 1  (--layer N runs one whole; --expert E one expert)\n"));
    CHECK(has(r, "choose one with --layer N"));

    r = swiglu_cli({"info", "--weights", m.weights, "--layer", "1", "--threads", "2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    for (const std::string& needle :
         {std::string("layer:      1  (Mixture-of-Experts: router, 2 experts per token)\n"),
          "model:      mixtral  (rule from " + m.dir + "/config.json)\n",
          std::string("router:     \"model.layers.1.block_sparse_moe.gate.weight\"  F32  "
                      "[E, d] = [4, 13]\n"),
          std::string("routing:    softmax, top-2 of 4, normalized\n"),
          std::string("experts:    4 x mixtral-expert  "
                      "\"model.layers.1.block_sparse_moe.experts.{E}.\"  d 13  f 10\n"),
          std::string("gate:       model.layers.1.block_sparse_moe.experts.0.w1.weight\n"),
          std::string("stored as:  F32\n"), std::string("runs as:    f32\n"),
          std::string("shared:     none\n"),
          // E x d router + 4 experts of 3 d f
          "parameters: " + std::to_string(4 * kD + 4 * 3 * kD * kF) + "  (router, experts)\n",
          std::string("threads:    2\n"), std::string("matmul:")}) {
        CAPTURE(needle);
        CHECK(has(r, needle));
    }
    // One expert: the block, as before.
    r = swiglu_cli({"info", "--weights", m.weights, "--layer", "1", "--expert", "3"});
    REQUIRE(r.status == 0);
    CHECK(has(r, "block:      \"model.layers.1.block_sparse_moe.experts.3.\"\n"));
    CHECK_FALSE(has(r, "routing:"));
}

TEST_CASE("GGUF: a file of one MoE layer runs whole with no --layer; info shows its shared block") {
    const MoeWeights m(32, 16, 4, 24, 5);
    const std::string path = write_gguf(m, true, true, false, metadata("qwen2moe", 4, 2));
    const std::string dir = temp_dir();
    const std::vector<float> x = random_input(5, 32, 3);
    write_file(dir + "/x.npy", detail::npy_bytes(x.data(), {5, 32}));
    ProcessResult r = swiglu_cli(
        {"run", "--weights", path, "--input", dir + "/x.npy", "--output", dir + "/y.npy"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    RouterRule rule;
    rule.top_k = 2;
    CHECK(detail::read_npy(dir + "/y.npy").data ==
          expected(m.layer(rule, false, true, true), x, 32));

    r = swiglu_cli({"info", "--weights", path});
    INFO(r.err);
    REQUIRE(r.status == 0);
    for (const std::string& needle :
         {std::string("model:      qwen2moe  (rule from GGUF metadata)\n"),
          std::string("routing:    softmax, top-2 of 4, not normalized\n"),
          std::string("experts:    4 x gguf-expert  \"blk.0.ffn_*_exps.\"  d 32  f 16\n"),
          std::string("runs as:    f32  (--dtype stored)\n"),
          std::string("shared:     \"blk.0.ffn_*_shexp.\"  gguf-shared-expert  d 32  "
                      "f 24  F32  runs as f32\n"),
          std::string("every token, scaled by sigmoid(x . \"blk.0.ffn_gate_inp_shexp.weight\")"),
          std::string("matmul:")}) {
        CAPTURE(needle);
        CHECK(has(r, needle));
    }

    // DeepSeek's rule in words.
    const MoeWeights ds(16, 8, 8, 16, 9);
    GgufMetadata meta = metadata("deepseek2", 8, 3);
    meta.u32("deepseek2.expert_gating_func", 2);
    meta.raw("deepseek2.expert_weights_norm", 7, std::string(1, '\1'));
    meta.f32("deepseek2.expert_weights_scale", 2.5f);
    meta.u32("deepseek2.expert_group_count", 4);
    meta.u32("deepseek2.expert_group_used_count", 2);
    meta.u32("deepseek2.expert_shared_count", 2);
    r = swiglu_cli({"info", "--weights", write_gguf(ds, true, false, true, meta), "--layer", "0"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(has(r,
              "routing:    sigmoid + bias (choice only), top-3 of 8 from the 2 best of 4 groups "
              "(each scored by its two best experts), normalized, scaled by 2.5\n"));
    CHECK(has(r, "bias:       \"blk.0.exp_probs_b.bias\"\n"));
    CHECK(has(r, "(2 shared experts)\n"));
    CHECK(has(r, "every token, unscaled\n"));
}
}
