// Whole Mixture-of-Experts layers from checkpoints (swiglu/moe_checkpoint.hpp):
// Mixtral, Qwen2-MoE (a gated shared expert; sharded), Qwen3-MoE / OLMoE,
// DeepSeek-V2 / V3 (groups, sigmoid, bias, scaling, shared experts) from
// safetensors and config.json, and GGUF's stacked experts with their
// metadata; each layer bit for bit the MoeLayer built from the same arrays,
// one against fp64; and the malformed layers and configs, refused naming
// the tensor or the key.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <swiglu/checkpoint.hpp>
#include <swiglu/moe_checkpoint.hpp>

#include "error_checks.hpp"
#include "gguf_writer.hpp"
#include "moe_files.hpp"
#include "reference.hpp"
#include "safetensors_writer.hpp"

using namespace swiglu;
using namespace swiglu::test;

namespace {

const char* const kMixtralConfig =
    R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2,
        "hidden_size": 16, "rope_scaling": null})";

// A folder holding model.safetensors (`tensors`) and config.json (`config`, unless empty).
std::string write_model(const std::vector<TensorSpec>& tensors, const std::string& config) {
    const std::string dir = temp_dir();
    write_file(dir + "/model.safetensors", safetensors_bytes(tensors));
    if (!config.empty()) write_file(dir + "/config.json", config);
    return dir + "/model.safetensors";
}

std::string folder_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

std::vector<TensorSpec> dense_layer(const RandomBlock& b, int layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
    return {{p + "gate_proj.weight", "F32", {b.f, b.d}, b.gate},
            {p + "up_proj.weight", "F32", {b.f, b.d}, b.up},
            {p + "down_proj.weight", "F32", {b.d, b.f}, b.down}};
}

// y of the loaded layer and of `direct` on the same tokens: the same bits.
void check_same(const MoeLayer& loaded, const MoeLayer& direct, std::int64_t d,
                std::int64_t tokens = 11) {
    const std::vector<float> x = random_input(tokens, d, 77);
    std::vector<float> a(x.size()), b(x.size());
    loaded.forward(x.data(), a.data(), tokens);
    direct.forward(x.data(), b.data(), tokens);
    CHECK(a == b);
}

std::string moe_error(const std::string& path, std::int64_t layer,
                      Status status = Status::invalid_argument) {
    return error_message([&] { load_moe_layer(path, layer); }, status);
}

// The error names the file, then every needle.
#define CHECK_MOE_FAILS(path, layer, ...)                                                  \
    do {                                                                                   \
        const std::string path_ = path;                                                    \
        const std::string message_ = moe_error(path_, layer);                              \
        INFO("message: " << message_);                                                     \
        CHECK(message_.rfind(path_ + ": ", 0) == 0);                                       \
        for (const std::string& needle_ : std::initializer_list<std::string>{__VA_ARGS__}) \
            CHECK(contains(message_, needle_));                                            \
    } while (0)

// The top k of v, descending, ties to the lower id.
std::vector<std::int32_t> top_k(const std::vector<double>& v, std::int64_t k) {
    std::vector<std::int32_t> ids(v.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) {
        return v[std::size_t(a)] > v[std::size_t(b)];
    });
    ids.resize(std::size_t(k));
    return ids;
}

GgufMetadata gguf_metadata(const std::string& arch, std::int64_t experts, std::int64_t k) {
    GgufMetadata m;
    m.string("general.architecture", arch);
    m.u32(arch + ".block_count", 2);
    m.u32(arch + ".expert_count", std::uint32_t(experts));
    m.u32(arch + ".expert_used_count", std::uint32_t(k));
    return m;
}

std::string write_gguf(const std::vector<GgufTensorSpec>& tensors, const GgufMetadata& metadata) {
    const std::string path = temp_dir() + "/model.gguf";
    write_file(path, gguf_bytes(tensors, metadata));
    return path;
}

}  // namespace

TEST_SUITE("moe_checkpoint") {
TEST_CASE("Mixtral: the layer as config.json routes it, the arrays' layer bit for bit, and fp64") {
    const MoeWeights m(16, 24, 4, 0, 3);
    const RandomBlock dense(16, 20, Layout::out_in, 8);
    std::vector<TensorSpec> tensors = dense_layer(dense, 0);
    for (const TensorSpec& t : hf_moe_tensors(m, kMixtralNames, 1, "F32")) tensors.push_back(t);
    const std::string path = write_model(tensors, kMixtralConfig);

    CHECK_FALSE(is_moe_layer(path, 0));
    CHECK(is_moe_layer(path, 1));
    CHECK_FALSE(is_moe_layer(path, 2));
    CHECK(moe_layers(path) == std::vector<std::int64_t>{1});
    CHECK(moe_layers(folder_of(path)) == std::vector<std::int64_t>{1});

    const MoeInfo info = describe_moe_layer(path, 1);
    CHECK(info.layer == 1);
    CHECK(info.model == "mixtral");
    CHECK(info.config == folder_of(path) + "/config.json");
    CHECK(info.experts == 4);
    CHECK(info.rule.top_k == 2);
    CHECK(info.rule.score == RouterScore::softmax);
    CHECK(info.rule.normalize);
    CHECK(info.rule.groups == 1);
    CHECK(info.rule.scaling == 1.0f);
    CHECK(info.router_name == "model.layers.1.block_sparse_moe.gate.weight");
    CHECK(info.router_format == "F32");
    CHECK(info.bias_name.empty());
    CHECK(info.expert.scheme == "mixtral-expert");
    CHECK(info.expert.d == 16);
    CHECK(info.expert.f == 24);
    CHECK(info.expert.gate_name == "model.layers.1.block_sparse_moe.experts.0.w1.weight");
    CHECK(info.experts_pattern == "model.layers.1.block_sparse_moe.experts.{E}.");
    CHECK(info.experts_dtype == "F32");
    CHECK_FALSE(info.has_shared);
    CHECK(info.shared_experts == 0);

    const MoeLayer layer = load_moe_layer(path, 1);
    CHECK(layer.experts().experts() == 4);
    CHECK(layer.d() == 16);
    CHECK(layer.shared() == nullptr);
    check_same(layer, m.layer(info.rule, false, false, false), m.d);
    // And the folder names the same checkpoint.
    check_same(load_moe_layer(folder_of(path), 1), layer, m.d);

    // Against fp64: the router's choice where it is clear, its weights, y.
    const std::int64_t tokens = 9;
    const std::vector<float> x = random_input(tokens, m.d, 5);
    std::vector<std::int32_t> ids(std::size_t(tokens * 2));
    std::vector<float> w(ids.size());
    layer.route(x.data(), tokens, ids.data(), w.data());
    int clear = 0;
    for (std::int64_t t = 0; t < tokens; ++t) {
        std::vector<double> logits(std::size_t(m.e), 0.0);
        for (std::int64_t e = 0; e < m.e; ++e)
            for (std::int64_t i = 0; i < m.d; ++i)
                logits[std::size_t(e)] += double(x[std::size_t(t * m.d + i)]) *
                                          double(m.router[std::size_t(e * m.d + i)]);
        std::vector<double> sorted = logits;
        std::sort(sorted.rbegin(), sorted.rend());
        if (sorted[1] - sorted[2] < 1e-4) continue;
        ++clear;
        const auto want = top_k(logits, 2);
        CHECK(ids[std::size_t(2 * t)] == want[0]);
        CHECK(ids[std::size_t(2 * t + 1)] == want[1]);
        // softmax over all, the two kept, normalized: sigmoid of their difference.
        const double p0 =
            1.0 / (1.0 + std::exp(logits[std::size_t(want[1])] - logits[std::size_t(want[0])]));
        CHECK(w[std::size_t(2 * t)] == doctest::Approx(p0).epsilon(1e-5));
    }
    CHECK(clear >= tokens - 2);
    std::vector<float> y(x.size());
    layer.forward(x.data(), y.data(), tokens);
    const std::vector<double> ref =
        m.reference(x.data(), tokens, ids.data(), w.data(), 2, false, false);
    CHECK(relative_error(y, ref) <= 2 * f32_tolerance(m.d, m.f));
}

TEST_CASE("Qwen2-MoE: BF16 experts, a gated shared expert, sharded over two files") {
    MoeWeights m(24, 16, 6, 40, 11);
    m.round_blocks("BF16");
    m.round_router("BF16");
    const std::vector<TensorSpec> all = hf_moe_tensors(m, kQwen2MoeNames, 0, "BF16", "BF16");
    // The router and experts 0-2 in one shard, the rest in the other.
    const std::size_t half = 1 + 3 * 3;
    const std::vector<TensorSpec> first(all.begin(), all.begin() + std::ptrdiff_t(half)),
        second(all.begin() + std::ptrdiff_t(half), all.end());
    const std::string dir = temp_dir();
    write_file(dir + "/model-00001-of-00002.safetensors", safetensors_bytes(first));
    write_file(dir + "/model-00002-of-00002.safetensors", safetensors_bytes(second));
    std::string map;
    for (const auto& [shard, tensors] : {std::pair{"model-00001-of-00002.safetensors", &first},
                                         {"model-00002-of-00002.safetensors", &second}})
        for (const TensorSpec& t : *tensors)
            map += std::string(map.empty() ? "" : ", ") + "\"" + t.name + "\": \"" + shard + "\"";
    write_file(dir + "/model.safetensors.index.json", "{\"weight_map\": {" + map + "}}");
    write_file(dir + "/config.json", kQwen2MoeConfig);

    for (const std::string& path : {dir + "/model.safetensors.index.json", dir}) {
        CAPTURE(path);
        const MoeInfo info = describe_moe_layer(path, 0);
        CHECK(info.model == "qwen2_moe");
        CHECK(info.config == dir + "/config.json");
        CHECK(info.rule.top_k == 4);
        CHECK_FALSE(info.rule.normalize);
        CHECK(info.router_name == "model.layers.0.mlp.gate.weight");
        CHECK(info.router_format == "BF16");
        CHECK(info.expert.scheme == "hf-moe-expert");
        CHECK(info.experts_dtype == "BF16");
        CHECK(info.has_shared);
        CHECK(info.shared.prefix == "model.layers.0.mlp.shared_expert.");
        CHECK(info.shared.f == 40);
        CHECK(info.shared_experts == 1);
        CHECK(info.shared_gate_name == "model.layers.0.mlp.shared_expert_gate.weight");

        const MoeLayer layer = load_moe_layer(path, 0, Options{2});
        REQUIRE(layer.shared() != nullptr);
        CHECK(layer.shared()->f() == 40);
        CHECK(layer.experts().threads() == 2);
        check_same(layer, m.layer(info.rule, false, true, true, Options{2}), m.d);
        // A format named converts every block alike.
        Options bf16;
        bf16.dtype = Dtype::bf16;
        check_same(load_moe_layer(path, 0, bf16), m.layer(info.rule, false, true, true, bf16), m.d);
    }
    // One expert still loads alone, as before.
    const Ffn expert = load_ffn(dir, {0, "", 3});
    CHECK(expert.f() == 16);
}

TEST_CASE("Qwen3-MoE and OLMoE: norm_topk_prob as the config says, false when it says nothing") {
    const MoeWeights m(16, 8, 8, 0, 21);
    const std::vector<TensorSpec> tensors = hf_moe_tensors(m, kQwen3MoeNames, 0, "F32");
    struct Case {
        const char* config;
        bool normalize;
    };
    for (const Case& c : {
             Case{R"({"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2,
                      "norm_topk_prob": true})",
                  true},
             Case{R"({"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2})",
                  false},
             Case{R"({"model_type": "olmoe", "num_experts": 8, "num_experts_per_tok": 8,
                      "norm_topk_prob": false})",
                  false},
         }) {
        CAPTURE(c.config);
        const std::string path = write_model(tensors, c.config);
        const MoeInfo info = describe_moe_layer(path, 0);
        CHECK(info.rule.normalize == c.normalize);
        CHECK_FALSE(info.has_shared);
        check_same(load_moe_layer(path, 0), m.layer(info.rule, false, false, false), m.d);
    }
}

TEST_CASE("load_moe_layer_part: experts [first, end), the shared block where asked, bit for bit") {
    const MoeWeights m(24, 16, 6, 40, 11);
    const std::string path =
        write_model(hf_moe_tensors(m, kQwen2MoeNames, 0, "F32"), kQwen2MoeConfig);
    const RouterRule rule = describe_moe_layer(path, 0).rule;
    for (bool with_shared : {true, false}) {
        CAPTURE(with_shared);
        const MoeLayer loaded = load_moe_layer_part(path, 0, 2, 5, with_shared);
        CHECK(loaded.first_expert() == 2);
        CHECK(loaded.routed_experts() == 6);
        CHECK(loaded.experts().experts() == 3);
        CHECK((loaded.shared() != nullptr) == with_shared);
        std::vector<ExpertWeights> w;
        for (std::int64_t e = 2; e < 5; ++e) {
            const RandomBlock& b = m.experts[std::size_t(e)];
            w.push_back({b.gate_view(), b.up_view(), b.down_view()});
        }
        std::unique_ptr<Ffn> shared;
        if (with_shared)
            shared = std::make_unique<Ffn>(m.shared->gate_view(), m.shared->up_view(),
                                           m.shared->down_view());
        check_same(loaded,
                   MoeLayer::part(WeightView::out_in(m.router.data(), m.e, m.d), rule, Experts(w),
                                  2, nullptr, std::move(shared),
                                  with_shared ? m.shared_gate.data() : nullptr),
                   m.d);
    }
    for (const auto& [first, end] : {std::pair{0, 0}, {3, 7}, {-1, 2}, {4, 3}}) {
        CAPTURE(first);
        CAPTURE(end);
        CHECK_THROWS_AS(load_moe_layer_part(path, 0, first, end, true), Error);
    }
}

TEST_CASE("DeepSeek-V3: sigmoid, groups by their two best, bias, scaling, shared experts") {
    const std::int64_t d = 16, f = 12;
    const MoeWeights m(d, f, 8, 2 * f, 31);  // two shared experts: one block of 2f
    const RandomBlock dense(d, 40, Layout::out_in, 4);
    std::vector<TensorSpec> tensors = dense_layer(dense, 0);
    for (const TensorSpec& t : hf_moe_tensors(m, kDeepseekV3Names, 1, "F32")) tensors.push_back(t);
    const std::string config =
        R"({"model_type": "deepseek_v3", "n_routed_experts": 8, "num_experts_per_tok": 3,
            "n_group": 4, "topk_group": 2, "topk_method": "noaux_tc", "scoring_func": "sigmoid",
            "routed_scaling_factor": 2.5, "norm_topk_prob": true, "n_shared_experts": 2,
            "moe_intermediate_size": 12, "first_k_dense_replace": 1})";
    const std::string path = write_model(tensors, config);
    CHECK(moe_layers(path) == std::vector<std::int64_t>{1});
    const MoeInfo info = describe_moe_layer(path, 1);
    CHECK(info.model == "deepseek_v3");
    CHECK(info.rule.top_k == 3);
    CHECK(info.rule.score == RouterScore::sigmoid);
    CHECK(info.rule.groups == 4);
    CHECK(info.rule.top_groups == 2);
    CHECK(info.rule.group_score == GroupScore::top2_sum);
    CHECK(info.rule.normalize);
    CHECK(info.rule.scaling == 2.5f);
    CHECK(info.bias_name == "model.layers.1.mlp.gate.e_score_correction_bias");
    CHECK(info.has_shared);
    CHECK(info.shared.prefix == "model.layers.1.mlp.shared_experts.");
    CHECK(info.shared.f == 2 * f);
    CHECK(info.shared_experts == 2);
    CHECK(info.shared_gate_name.empty());
    const MoeLayer layer = load_moe_layer(path, 1);
    check_same(layer, m.layer(info.rule, true, true, false), d);
    // The dense layer is no MoE layer; it loads as a block.
    CHECK_MOE_FAILS(path, 0, "layer 0: holds no routed experts (layers with experts: 1");
    CHECK(load_ffn(path, {0, "", -1}).f() == 40);

    // DeepSeek-V2's rules on the same tensors: groups by their best, and
    // the weights scaled only where not normalized.
    struct V2 {
        const char* config;
        std::int64_t groups;
        bool normalize;
        float scaling;
    };
    for (const V2& v : {
             V2{R"({"model_type": "deepseek_v2", "n_routed_experts": 8, "num_experts_per_tok": 3,
                    "n_group": 4, "topk_group": 2, "topk_method": "group_limited_greedy",
                    "routed_scaling_factor": 16.0, "norm_topk_prob": false, "n_shared_experts": 2})",
                4, false, 16.0f},
             V2{R"({"model_type": "deepseek_v2", "n_routed_experts": 8, "num_experts_per_tok": 3,
                    "n_group": null, "topk_method": "greedy", "routed_scaling_factor": 16.0,
                    "norm_topk_prob": true, "n_shared_experts": 2})",
                1, true, 1.0f},
         }) {
        CAPTURE(v.config);
        write_file(folder_of(path) + "/config.json", v.config);
        // The V3 bias is no part of V2's rule: not looked for.
        const MoeInfo v2 = describe_moe_layer(path, 1);
        CHECK(v2.rule.score == RouterScore::softmax);
        CHECK(v2.rule.groups == v.groups);
        CHECK(v2.rule.group_score == GroupScore::max);
        CHECK(v2.rule.normalize == v.normalize);
        CHECK(v2.rule.scaling == v.scaling);
        CHECK(v2.bias_name.empty());
        check_same(load_moe_layer(path, 1), m.layer(v2.rule, false, true, false), d);
    }
}

TEST_CASE("GGUF qwen2moe: stacked experts, an F16 router, a gated shared expert") {
    MoeWeights m(32, 16, 4, 24, 41);
    m.round_router("F16");
    const std::string path = write_gguf(gguf_moe_tensors(m, 1, 0, 1, true, true, false),
                                        gguf_metadata("qwen2moe", 4, 2));
    CHECK(moe_layers(path) == std::vector<std::int64_t>{1});
    const MoeInfo info = describe_moe_layer(path, 1);
    CHECK(info.model == "qwen2moe");
    CHECK(info.config == "GGUF metadata");
    CHECK(info.experts == 4);
    CHECK(info.rule.top_k == 2);
    CHECK_FALSE(info.rule.normalize);
    CHECK(info.router_name == "blk.1.ffn_gate_inp.weight");
    CHECK(info.router_format == "F16");
    CHECK(info.expert.scheme == "gguf-expert");
    CHECK(info.experts_pattern == "blk.1.ffn_*_exps.");
    CHECK(info.has_shared);
    CHECK(info.shared.gate_name == "blk.1.ffn_gate_shexp.weight");
    CHECK(info.shared.f == 24);
    CHECK(info.shared_gate_name == "blk.1.ffn_gate_inp_shexp.weight");
    check_same(load_moe_layer(path, 1), m.layer(info.rule, false, true, true), m.d);
}

TEST_CASE("GGUF qwen3moe in Q8_0: each expert as stored, as load_ffn loads it alone") {
    const MoeWeights m(64, 32, 4, 0, 51);
    const std::string path = write_gguf(gguf_moe_tensors(m, 0, 8, 0, false, false, false),
                                        gguf_metadata("qwen3moe", 4, 2));
    const MoeInfo info = describe_moe_layer(path, 0);
    CHECK(info.rule.normalize);
    CHECK(info.experts_dtype == "Q8_0");
    Options stored;
    stored.keep_stored = true;
    const MoeLayer layer = load_moe_layer(path, 0, stored);
    CHECK(layer.experts().implementation().dtype == Dtype::q8_0);
    std::vector<Ffn> blocks;
    for (std::int64_t e = 0; e < 4; ++e) blocks.push_back(load_ffn(path, {0, "", e}, stored));
    const MoeLayer direct(WeightView::out_in(m.router.data(), m.e, m.d), info.rule,
                          Experts(std::move(blocks)));
    check_same(layer, direct, m.d);
}

TEST_CASE("GGUF Q4_K_M-style experts: gate and up Q4_K, down Q6_K, each run as stored") {
    const MoeWeights m(256, 256, 2, 0, 71);
    const std::string path = write_gguf(gguf_moe_tensors(m, 0, 12, 0, false, false, false, 14),
                                        gguf_metadata("llama", 2, 1));
    const MoeInfo info = describe_moe_layer(path, 0);
    CHECK(info.model == "llama");
    CHECK(info.rule.normalize);
    CHECK(info.experts_dtype == "mixed (gate Q4_K, up Q4_K, down Q6_K)");
    Options stored;
    stored.keep_stored = true;
    const MoeLayer layer = load_moe_layer(path, 0, stored);
    CHECK(layer.experts().implementation().dtype == Dtype::q4_k);
    CHECK(layer.experts().implementation().down_dtype == Dtype::q6_k);
    std::vector<Ffn> blocks;
    for (std::int64_t e = 0; e < 2; ++e) blocks.push_back(load_ffn(path, {0, "", e}, stored));
    check_same(layer,
               MoeLayer(WeightView::out_in(m.router.data(), m.e, m.d), info.rule,
                        Experts(std::move(blocks))),
               m.d, 5);
}

TEST_CASE("GGUF deepseek2: sigmoid, groups, exp_probs_b, weights normalized and scaled") {
    const MoeWeights m(16, 12, 8, 24, 61);
    GgufMetadata meta = gguf_metadata("deepseek2", 8, 3);
    meta.u32("deepseek2.expert_gating_func", 2);
    meta.raw("deepseek2.expert_weights_norm", 7, std::string(1, '\1'));
    meta.f32("deepseek2.expert_weights_scale", 2.5f);
    meta.u32("deepseek2.expert_group_count", 4);
    meta.u32("deepseek2.expert_group_used_count", 2);
    meta.u32("deepseek2.expert_shared_count", 2);
    meta.u32("deepseek2.leading_dense_block_count", 1);
    const std::string path = write_gguf(gguf_moe_tensors(m, 1, 0, 0, true, false, true), meta);
    const MoeInfo info = describe_moe_layer(path, 1);
    CHECK(info.rule.score == RouterScore::sigmoid);
    CHECK(info.rule.normalize);
    CHECK(info.rule.scaling == 2.5f);
    CHECK(info.rule.groups == 4);
    CHECK(info.rule.top_groups == 2);
    CHECK(info.rule.group_score == GroupScore::top2_sum);
    CHECK(info.bias_name == "blk.1.exp_probs_b.bias");
    CHECK(info.shared_experts == 2);
    CHECK(info.shared_gate_name.empty());
    check_same(load_moe_layer(path, 1), m.layer(info.rule, true, true, false), m.d);
}

TEST_CASE("malformed layers: the tensor that is missing or disagrees is named") {
    const MoeWeights m(16, 24, 4, 0, 3);
    const std::vector<TensorSpec> good = hf_moe_tensors(m, kMixtralNames, 1, "F32");
    auto without = [&](const std::string& name) {
        std::vector<TensorSpec> t;
        for (const TensorSpec& s : good)
            if (s.name != name) t.push_back(s);
        return t;
    };
    const std::string router = "model.layers.1.block_sparse_moe.gate.weight";
    CHECK_MOE_FAILS(write_model(without(router), kMixtralConfig), 1,
                    "layer 1: holds 4 experts (\"model.layers.1.block_sparse_moe.experts.{E}.\" "
                    "with E = 0, 1, 2, 3) but no router: \"" +
                        router + "\" is missing");
    {
        std::vector<TensorSpec> t = without(router);
        t.push_back({router, "F32", {5, 16}, std::vector<float>(80, 0.1f)});
        CHECK_MOE_FAILS(write_model(t, kMixtralConfig), 1,
                        "router \"" + router +
                            "\" [5, 16] routes to 5 experts, but the layer "
                            "holds 4 experts");
    }
    {
        std::vector<TensorSpec> t = without(router);
        t.push_back({router, "F32", {4, 8}, std::vector<float>(32, 0.1f)});
        CHECK_MOE_FAILS(write_model(t, kMixtralConfig), 1, "takes d = 8, the experts' d is 16");
    }
    {
        std::vector<TensorSpec> t = without(router);
        std::vector<float> bad = m.router;
        bad[5] = std::nanf("");
        t.push_back({router, "F32", {4, 16}, bad});
        CHECK_MOE_FAILS(write_model(t, kMixtralConfig), 1,
                        "router \"" + router + "\" holds nan at element 5");
    }
    // An expert that lacks a tensor, and one that is not there at all.
    CHECK_MOE_FAILS(
        write_model(without("model.layers.1.block_sparse_moe.experts.2.w3.weight"), kMixtralConfig),
        1,
        "but no expert 2 (missing \"model.layers.1.block_sparse_moe.experts.2.w3.weight\"): "
        "the experts are numbered 0 to E - 1");
    {
        std::vector<TensorSpec> t;
        for (const TensorSpec& s : good)
            if (s.name.find("experts.3.") == std::string::npos) t.push_back(s);
        CHECK_MOE_FAILS(
            write_model(t, kMixtralConfig), 1,
            "router \"" + router +
                "\" [4, 16] routes to 4 experts, but the layer "
                "holds 3 experts (\"model.layers.1.block_sparse_moe.experts.{E}.\" with "
                "E = 0, 1, 2)");
    }
    {
        // Expert 1 of another f.
        const RandomBlock other(16, 20, Layout::out_in, 9);
        std::vector<TensorSpec> t = good;
        for (TensorSpec& x : t) {
            const std::string p = "model.layers.1.block_sparse_moe.experts.1.";
            if (x.name == p + "w1.weight") x = {x.name, "F32", {20, 16}, other.gate};
            if (x.name == p + "w3.weight") x = {x.name, "F32", {20, 16}, other.up};
            if (x.name == p + "w2.weight") x = {x.name, "F32", {16, 20}, other.down};
        }
        CHECK_MOE_FAILS(write_model(t, kMixtralConfig), 1,
                        "expert 1 (\"model.layers.1.block_sparse_moe.experts.1.w1.weight\") has "
                        "d = 16, f = 20; expert 0 has d = 16, f = 24");
    }
    CHECK_MOE_FAILS(write_model(good, kMixtralConfig), 0,
                    "layer 0: holds no SwiGLU block (layers with experts: 1");

    // DeepSeek-V3 without its bias; Qwen2-MoE without its shared expert or its gate.
    const MoeWeights s(16, 12, 8, 24, 31);
    const std::string v3 =
        R"({"model_type": "deepseek_v3", "n_routed_experts": 8, "num_experts_per_tok": 3,
            "n_group": 4, "topk_group": 2, "topk_method": "noaux_tc",
            "routed_scaling_factor": 2.5, "norm_topk_prob": true, "n_shared_experts": 1})";
    HfMoeNames no_bias = kDeepseekV3Names;
    no_bias.bias = false;
    CHECK_MOE_FAILS(write_model(hf_moe_tensors(s, no_bias, 0, "F32"), v3), 0,
                    "\"model.layers.0.mlp.gate.e_score_correction_bias\" is missing");
    HfMoeNames no_shared = kDeepseekV3Names;
    no_shared.shared = nullptr;
    CHECK_MOE_FAILS(write_model(hf_moe_tensors(s, no_shared, 0, "F32"), v3), 0,
                    "no shared expert block at \"model.layers.0.mlp.shared_experts.\"");
    // A Qwen-style expert without up_proj: the one name it lacks.
    {
        std::vector<TensorSpec> t;
        for (const TensorSpec& x : hf_moe_tensors(s, kQwen3MoeNames, 0, "F32"))
            if (x.name != "model.layers.0.mlp.experts.5.up_proj.weight") t.push_back(x);
        CHECK_MOE_FAILS(
            write_model(t,
                        R"({"model_type": "olmoe", "num_experts": 8, "num_experts_per_tok": 2})"),
            0, "but no expert 5 (missing \"model.layers.0.mlp.experts.5.up_proj.weight\"): ");
    }
    const std::string qwen2 =
        R"({"model_type": "qwen2_moe", "num_experts": 8, "num_experts_per_tok": 2})";
    HfMoeNames no_gate = kQwen2MoeNames;
    no_gate.shared_gate = false;
    CHECK_MOE_FAILS(write_model(hf_moe_tensors(s, no_gate, 0, "F32"), qwen2), 0,
                    "\"model.layers.0.mlp.shared_expert_gate.weight\" is missing");
    {
        std::vector<TensorSpec> t;
        for (const TensorSpec& x : hf_moe_tensors(s, kQwen2MoeNames, 0, "F32"))
            if (x.name != "model.layers.0.mlp.shared_expert.up_proj.weight") t.push_back(x);
        CHECK_MOE_FAILS(write_model(t, qwen2), 0,
                        "no shared expert block at \"model.layers.0.mlp.shared_expert.\" (missing "
                        "\"model.layers.0.mlp.shared_expert.up_proj.weight\")");
    }
}

TEST_CASE("config.json: missing, unknown model_type, bad k, bad groups: the key and the path") {
    const MoeWeights m(16, 24, 4, 0, 3);
    const std::vector<TensorSpec> tensors = hf_moe_tensors(m, kMixtralNames, 1, "F32");
    const std::string missing = write_model(tensors, "");
    CHECK_MOE_FAILS(missing, 1,
                    "layer 1: holds 4 experts (\"model.layers.1.block_sparse_moe.experts.{E}.\" "
                    "with E = 0, 1, 2, 3); its routing rule comes from the model's config.json: " +
                        folder_of(missing) + "/config.json not found",
                    "Put the model's config.json beside the weights, or choose one expert with "
                    "the expert selector (--expert E)");
    // Each one expert still loads alone without it.
    CHECK(load_ffn(missing, {1, "", 2}).f() == 24);
    struct Case {
        const char* config;
        const char* needle;
    };
    for (const Case& c : {
             Case{R"({"model_type": "llama", "num_experts_per_tok": 2})",
                  "model_type \"llama\" has no Mixture-of-Experts routing rule here"},
             Case{R"({"num_local_experts": 4})", "\"model_type\" is missing"},
             Case{R"({"model_type": "mixtral", "num_local_experts": 4})",
                  "\"num_experts_per_tok\" is missing: mixtral's routing needs it"},
             Case{R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 5})",
                  "\"num_experts_per_tok\" = 5 must be from 1 to \"num_local_experts\" = 4"},
             Case{R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 0})",
                  "\"num_experts_per_tok\" = 0 must be from 1"},
             Case{
                 R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": "2"})",
                 "\"num_experts_per_tok\" must be an integer, found \"2\""},
             Case{
                 R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2.5})",
                 "\"num_experts_per_tok\" must be an integer, found 2.5"},
             Case{R"({"model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2})",
                  "config.json says \"num_local_experts\" = 8"},
             Case{R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2,
                      "num_experts_per_tok": 2})",
                  "duplicate key \"num_experts_per_tok\""},
             Case{R"({"model_type": "mixtral", )", "config is not valid JSON"},
             Case{"[1, 2]", "config must be a JSON object, found array"},
             Case{R"({"model_type": "deepseek_v3", "n_routed_experts": 4, "num_experts_per_tok": 2,
                      "n_group": 3, "topk_group": 1, "topk_method": "noaux_tc",
                      "routed_scaling_factor": 1.0, "norm_topk_prob": true})",
                  "\"n_group\" = 3 must be >= 1 and divide \"n_routed_experts\" = 4"},
             Case{R"({"model_type": "deepseek_v3", "n_routed_experts": 4, "num_experts_per_tok": 2,
                      "n_group": 4, "topk_group": 2, "topk_method": "noaux_tc",
                      "routed_scaling_factor": 1.0, "norm_topk_prob": true})",
                  "\"n_group\" = 4 leaves 1 expert per group"},
             Case{R"({"model_type": "deepseek_v3", "n_routed_experts": 4, "num_experts_per_tok": 3,
                      "n_group": 2, "topk_group": 1, "topk_method": "noaux_tc",
                      "routed_scaling_factor": 1.0, "norm_topk_prob": true})",
                  "\"num_experts_per_tok\" = 3 exceeds the 2 experts of \"topk_group\" = 1 groups "
                  "of 2"},
             Case{R"({"model_type": "deepseek_v3", "n_routed_experts": 4, "num_experts_per_tok": 2,
                      "topk_method": "greedy", "routed_scaling_factor": 1.0, "norm_topk_prob": true})",
                  "\"topk_method\" is \"greedy\"; deepseek_v3 routes with \"noaux_tc\""},
             Case{R"({"model_type": "deepseek_v2", "n_routed_experts": 4, "num_experts_per_tok": 2,
                      "topk_method": "greedy", "norm_topk_prob": false})",
                  "\"routed_scaling_factor\" is missing"},
             Case{R"({"model_type": "deepseek_v2", "n_routed_experts": 4, "num_experts_per_tok": 2,
                      "topk_method": "greedy", "scoring_func": "relu", "norm_topk_prob": false,
                      "routed_scaling_factor": 1})",
                  "\"scoring_func\" is \"relu\""},
         }) {
        CAPTURE(c.config);
        const std::string path = write_model(tensors, c.config);
        CHECK_MOE_FAILS(path, 1, folder_of(path) + "/config.json", c.needle);
    }
}

TEST_CASE("GGUF: the metadata key or tensor that is missing or disagrees is named") {
    const MoeWeights m(32, 16, 4, 24, 41);
    const std::vector<GgufTensorSpec> tensors = gguf_moe_tensors(m, 0, 0, 0, false, false, false);
    GgufMetadata no_k;
    no_k.string("general.architecture", "qwen3moe");
    no_k.u32("qwen3moe.expert_count", 4);
    CHECK_MOE_FAILS(write_gguf(tensors, no_k), 0,
                    "layer 0: its routing rule: GGUF metadata: \"qwen3moe.expert_used_count\" is "
                    "missing");
    CHECK_MOE_FAILS(write_gguf(tensors, gguf_metadata("gpt2", 4, 2)), 0,
                    "general.architecture \"gpt2\" has no Mixture-of-Experts routing rule");
    CHECK_MOE_FAILS(write_gguf(tensors, gguf_metadata("olmoe", 8, 2)), 0,
                    "but GGUF metadata says \"olmoe.expert_count\" = 8");
    CHECK_MOE_FAILS(write_gguf(tensors, gguf_metadata("olmoe", 4, 6)), 0,
                    "\"olmoe.expert_used_count\" = 6 must be from 1 to \"olmoe.expert_count\" = 4");
    GgufMetadata wrong_type = gguf_metadata("deepseek2", 4, 2);
    wrong_type.u32("deepseek2.expert_weights_norm", 1);
    wrong_type.f32("deepseek2.expert_weights_scale", 1.0f);
    CHECK_MOE_FAILS(write_gguf(tensors, wrong_type), 0,
                    "\"deepseek2.expert_weights_norm\" must be a bool, found a u32");
    CHECK_MOE_FAILS(write_gguf(tensors, gguf_metadata("deepseek2", 4, 2)), 0,
                    "\"deepseek2.expert_weights_scale\" is missing");
    std::vector<GgufTensorSpec> no_router(tensors.begin() + 1, tensors.end());
    CHECK_MOE_FAILS(write_gguf(no_router, gguf_metadata("qwen3moe", 4, 2)), 0,
                    "no router: \"blk.0.ffn_gate_inp.weight\" is missing");
    std::vector<GgufTensorSpec> wide = tensors;
    wide[0] = {"blk.0.ffn_gate_inp.weight", 0, {32, 5}, std::vector<float>(160, 0.5f), ""};
    CHECK_MOE_FAILS(write_gguf(wide, gguf_metadata("qwen3moe", 4, 2)), 0,
                    "[5, 32] routes to 5 experts, but the layer holds 4 experts "
                    "(\"blk.0.ffn_*_exps.\" with E = 0, 1, 2, 3)");
    std::vector<GgufTensorSpec> half_shared = gguf_moe_tensors(m, 0, 0, 0, true, false, false);
    half_shared.pop_back();  // ffn_down_shexp
    CHECK_MOE_FAILS(write_gguf(half_shared, gguf_metadata("qwen2moe", 4, 2)), 0,
                    "the shared experts lack \"blk.0.ffn_down_shexp.weight\"");
    GgufMetadata shared_said = gguf_metadata("deepseek2", 4, 2);
    shared_said.f32("deepseek2.expert_weights_scale", 1.0f);
    shared_said.u32("deepseek2.expert_shared_count", 1);
    CHECK_MOE_FAILS(write_gguf(tensors, shared_said), 0, "\"deepseek2.expert_shared_count\" = 1");
}
}
