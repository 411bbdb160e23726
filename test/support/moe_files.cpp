#include "moe_files.hpp"

#include <cmath>

namespace swiglu::test {

const HfMoeNames kMixtralNames{
    "block_sparse_moe.", "w1.weight", "w3.weight", "w2.weight", nullptr, false, false};
const char* const kQwen2MoeConfig =
    R"({"model_type": "qwen2_moe", "num_experts": 6, "num_experts_per_tok": 4,
        "norm_topk_prob": false, "shared_expert_intermediate_size": 40,
        "moe_intermediate_size": 16, "decoder_sparse_step": 1})";
const HfMoeNames kQwen2MoeNames{
    "mlp.", "gate_proj.weight", "up_proj.weight", "down_proj.weight", "shared_expert.", true,
    false};
const HfMoeNames kQwen3MoeNames{
    "mlp.", "gate_proj.weight", "up_proj.weight", "down_proj.weight", nullptr, false, false};
const HfMoeNames kDeepseekV3Names{
    "mlp.", "gate_proj.weight", "up_proj.weight", "down_proj.weight", "shared_experts.", false,
    true};

MoeWeights::MoeWeights(std::int64_t d_, std::int64_t f_, std::int64_t e_, std::int64_t shared_f,
                       unsigned seed)
    : d(d_), f(f_), e(e_) {
    for (std::int64_t i = 0; i < e; ++i)
        experts.emplace_back(d, f, Layout::out_in, seed + 17 * unsigned(i));
    // Logits spread over a few units, so that near-ties are rare.
    router = uniform(std::size_t(e * d), 4.0f / std::sqrt(float(d)), seed + 1001);
    bias = uniform(std::size_t(e), 0.5f, seed + 1002);
    shared_gate = uniform(std::size_t(d), 1.0f / std::sqrt(float(d)), seed + 1003);
    if (shared_f > 0)
        shared = std::make_unique<RandomBlock>(d, shared_f, Layout::out_in, seed + 999);
}

void MoeWeights::round_blocks(const std::string& dtype) {
    auto round = [&dtype](RandomBlock& b) {
        b.gate = rounded(b.gate, dtype);
        b.up = rounded(b.up, dtype);
        b.down = rounded(b.down, dtype);
    };
    for (RandomBlock& b : experts) round(b);
    if (shared) round(*shared);
}

void MoeWeights::round_router(const std::string& dtype) {
    router = rounded(router, dtype);
    bias = rounded(bias, dtype);
    shared_gate = rounded(shared_gate, dtype);
}

MoeWeights::Stacked MoeWeights::stacked(Layout layout) const {
    const bool t = layout == Layout::in_out;  // each (out_in) matrix transposed
    Stacked out;
    const auto put = [t](std::vector<float>& to, const std::vector<float>& w, std::int64_t rows,
                         std::int64_t cols) {  // w: rows x cols
        for (std::int64_t i = 0; i < (t ? cols : rows); ++i)
            for (std::int64_t j = 0; j < (t ? rows : cols); ++j)
                to.push_back(t ? w[std::size_t(j * cols + i)] : w[std::size_t(i * cols + j)]);
    };
    for (const RandomBlock& b : experts) {
        put(out.gate, b.gate, f, d);
        put(out.up, b.up, f, d);
        put(out.down, b.down, d, f);
    }
    return out;
}

MoeLayer MoeWeights::layer(const RouterRule& rule, bool with_bias, bool with_shared, bool with_gate,
                           const Options& options) const {
    std::vector<ExpertWeights> w;
    for (const RandomBlock& b : experts) w.push_back({b.gate_view(), b.up_view(), b.down_view()});
    std::unique_ptr<Ffn> s;
    if (with_shared)
        s = std::make_unique<Ffn>(shared->gate_view(), shared->up_view(), shared->down_view(),
                                  options);
    return MoeLayer(WeightView::out_in(router.data(), e, d), rule, Experts(w, options),
                    with_bias ? bias.data() : nullptr, std::move(s),
                    with_gate ? shared_gate.data() : nullptr);
}

std::vector<double> MoeWeights::reference(const float* x, std::int64_t tokens,
                                          const std::int32_t* ids, const float* weights,
                                          std::int64_t k, bool with_shared, bool with_gate) const {
    std::vector<double> y(std::size_t(tokens * d), 0.0);
    for (std::int64_t t = 0; t < tokens; ++t) {
        const float* xt = x + t * d;
        double* yt = y.data() + t * d;
        for (std::int64_t j = 0; j < k; ++j) {
            const RandomBlock& b = experts[std::size_t(ids[t * k + j])];
            const auto r = reference_ffn(xt, 1, b.gate_view(), b.up_view(), b.down_view());
            for (std::int64_t i = 0; i < d; ++i)
                yt[i] += double(weights[t * k + j]) * r[std::size_t(i)];
        }
        if (!with_shared) continue;
        const auto r =
            reference_ffn(xt, 1, shared->gate_view(), shared->up_view(), shared->down_view());
        double g = 1.0;
        if (with_gate) {
            double dot = 0;
            for (std::int64_t i = 0; i < d; ++i)
                dot += double(xt[i]) * double(shared_gate[std::size_t(i)]);
            g = 1.0 / (1.0 + std::exp(-dot));
        }
        for (std::int64_t i = 0; i < d; ++i) yt[i] += g * r[std::size_t(i)];
    }
    return y;
}

std::vector<TensorSpec> hf_moe_tensors(const MoeWeights& m, const HfMoeNames& n, int layer,
                                       const std::string& dtype, const std::string& router_dtype) {
    const std::string p = "model.layers." + std::to_string(layer) + "." + n.container;
    std::vector<TensorSpec> out;
    out.push_back({p + "gate.weight", router_dtype, {m.e, m.d}, m.router});
    if (n.bias) out.push_back({p + "gate.e_score_correction_bias", "F32", {m.e}, m.bias});
    auto block = [&](const std::string& at, const RandomBlock& b, const char* gate, const char* up,
                     const char* down) {
        out.push_back({at + gate, dtype, {b.f, b.d}, b.gate});
        out.push_back({at + up, dtype, {b.f, b.d}, b.up});
        out.push_back({at + down, dtype, {b.d, b.f}, b.down});
    };
    for (std::int64_t e = 0; e < m.e; ++e)
        block(p + "experts." + std::to_string(e) + ".", m.experts[std::size_t(e)], n.gate, n.up,
              n.down);
    if (n.shared && m.shared)
        block(p + n.shared, *m.shared, "gate_proj.weight", "up_proj.weight", "down_proj.weight");
    if (n.shared_gate)
        out.push_back({p + "shared_expert_gate.weight", router_dtype, {1, m.d}, m.shared_gate});
    return out;
}

namespace {

std::vector<float> stacked(const std::vector<RandomBlock>& blocks,
                           std::vector<float> RandomBlock::*weight) {
    std::vector<float> out;
    for (const RandomBlock& b : blocks)
        out.insert(out.end(), (b.*weight).begin(), (b.*weight).end());
    return out;
}

}  // namespace

std::vector<GgufTensorSpec> gguf_moe_tensors(const MoeWeights& m, int layer, std::uint32_t type,
                                             std::uint32_t router_type, bool with_shared,
                                             bool with_gate, bool with_bias, int down_type) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    std::vector<GgufTensorSpec> out;
    out.push_back({p + "ffn_gate_inp.weight", router_type, {m.d, m.e}, m.router, ""});
    out.push_back({p + "ffn_gate_exps.weight",
                   type,
                   {m.d, m.f, m.e},
                   stacked(m.experts, &RandomBlock::gate),
                   ""});
    out.push_back({p + "ffn_up_exps.weight",
                   type,
                   {m.d, m.f, m.e},
                   stacked(m.experts, &RandomBlock::up),
                   ""});
    out.push_back({p + "ffn_down_exps.weight",
                   down_type < 0 ? type : std::uint32_t(down_type),
                   {m.f, m.d, m.e},
                   stacked(m.experts, &RandomBlock::down),
                   ""});
    if (with_shared) {
        const RandomBlock& s = *m.shared;
        out.push_back({p + "ffn_gate_shexp.weight", 0, {m.d, s.f}, s.gate, ""});
        out.push_back({p + "ffn_up_shexp.weight", 0, {m.d, s.f}, s.up, ""});
        out.push_back({p + "ffn_down_shexp.weight", 0, {s.f, m.d}, s.down, ""});
    }
    if (with_gate) out.push_back({p + "ffn_gate_inp_shexp.weight", 0, {m.d}, m.shared_gate, ""});
    if (with_bias) out.push_back({p + "exp_probs_b.bias", 0, {m.e}, m.bias, ""});
    return out;
}

}  // namespace swiglu::test
