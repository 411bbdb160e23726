// Mixture-of-experts layers: a router that picks k of E experts per token,
// and the routed experts themselves, each a SwiGLU block.
//
//   y[t] = sum over j < k of weights[t, j] * expert_{ids[t, j]}(x[t])
//
// (Mixtral, Qwen2-MoE / Qwen3-MoE, OLMoE, DeepSeek-V2 / V3). route() turns
// the router's logits into (ids, weights) as each model family defines it;
// Experts runs the chosen experts, each expert's weights read once per call
// whatever the number of tokens that chose it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "swiglu/swiglu.hpp"

namespace swiglu {

// ---- Routers --------------------------------------------------------------

// How a router turns each token's E logits into k expert ids and weights.
//   Mixtral:            softmax, k = 2, normalize = true
//   Qwen3-MoE:          softmax, normalize = config's norm_topk_prob (true)
//   Qwen2-MoE, OLMoE:   softmax, normalize = norm_topk_prob (false)
//   DeepSeek-V2:        softmax, groups = n_group, top_groups = topk_group
//                       (group_limited_greedy; 1 and 1 for greedy),
//                       group_score = max, scaling = routed_scaling_factor
//   DeepSeek-V3:        sigmoid, bias = e_score_correction_bias (selection
//                       only), groups / top_groups as V2, group_score =
//                       top2_sum, normalize = true, scaling = routed_scaling_factor
enum class RouterScore { softmax, sigmoid };
// A group's score, for group-limited routing: the largest score of its
// experts (DeepSeek-V2), or the sum of its two largest (DeepSeek-V3).
enum class GroupScore { max, top2_sum };

struct RouterRule {
    std::int64_t top_k = 1;  // k, 1 <= k <= E
    RouterScore score = RouterScore::softmax;
    // Divide the k chosen weights by their sum (after softmax / sigmoid, before scaling).
    bool normalize = false;
    // Group-limited routing: the E experts in `groups` equal groups of
    // consecutive ids; only experts of the `top_groups` best groups may be
    // chosen. groups = 1 (and top_groups = 1): plain top-k.
    std::int64_t groups = 1;
    std::int64_t top_groups = 1;
    GroupScore group_score = GroupScore::max;
    // Every weight is multiplied by it last (routed_scaling_factor).
    float scaling = 1.0f;
};

// For `tokens` rows of E router logits (row-major, tokens x E): each
// token's k experts by score (score + bias where bias is given: E floats,
// used to choose, never in the weights) in descending order, ties to the
// lower id, into ids (tokens x k), and their weights (the scores, then
// normalized and scaled as the rule says) into weights (tokens x k).
// Scores are computed in double and each weight rounded to float once; a
// tie is two equal double scores (+ bias). Normalizing sigmoid scores adds
// 1e-20 to the sum, as DeepSeek-V3 does (softmax's k largest never sum to 0).
// Throws swiglu::Error(invalid_argument) for a bad rule (checked even when
// tokens = 0; top2_sum needs >= 2 experts per group), shape or pointer,
// overlapping logits / bias / ids / weights, or a non-finite logit or bias
// (a NaN ranks nowhere; softmax of +inf is NaN), writing nothing.
// tokens = 0 does nothing else.
SWIGLU_API void route(const float* logits, std::int64_t tokens, std::int64_t experts,
                      const RouterRule& rule, const float* bias, std::int32_t* ids, float* weights);

// ---- Routed experts --------------------------------------------------------

// One expert's three weights (shapes as for an Ffn).
struct ExpertWeights {
    WeightView gate, up, down;
};

namespace detail {
class ExpertsImpl;
class MoeLayerImpl;
}  // namespace detail

class SWIGLU_API Experts {
public:
    // E >= 1 experts of one shape (d, f), each packed in options' format as
    // an Ffn would be (options.dtype, down_dtype; threads is the count every
    // call may use). Throws swiglu::Error as Ffn does, and invalid_argument
    // for no experts or experts whose shapes differ (naming the expert).
    explicit Experts(const std::vector<ExpertWeights>& experts, const Options& options = {});
    // E >= 1 blocks already built (say by load_ffn, straight from a file's
    // experts), each of one shape and one thread count; taken over. Throws
    // invalid_argument for none, or blocks that differ (naming the block).
    explicit Experts(std::vector<Ffn> blocks);
    // E experts stacked in three arrays, PyTorch style (layout out_in):
    // gate, up (E, f, d), down (E, d, f); in_out: gate, up (E, d, f), down (E, f, d).
    static Experts stacked(const float* gate, const float* up, const float* down,
                           std::int64_t experts, std::int64_t d, std::int64_t f, Layout layout,
                           const Options& options = {});
    ~Experts();
    Experts(Experts&&) noexcept;
    Experts& operator=(Experts&&) noexcept;
    Experts(const Experts&) = delete;
    Experts& operator=(const Experts&) = delete;

    std::int64_t experts() const;
    std::int64_t d() const;
    std::int64_t f() const;
    int threads() const;
    Implementation implementation() const;

    // y[t] = sum over j < k of weights[t, j] * expert_{ids[t, j]}(x[t]) for
    // `tokens` rows: x, y (tokens, d) f32; ids, weights (tokens, k). The
    // tokens that chose an expert run through it together, so each chosen
    // expert's weights are read once per call; the k terms are added in j
    // order, so y is bit-identical for any thread count. y may be x (in
    // place); any other overlap is rejected. An id out of [0, E), k < 1, a
    // NaN or infinite weight, a null pointer or an overflowing size is an
    // Error(invalid_argument) and writes nothing. tokens = 0 does nothing.
    // Safe to call from several threads at once, as Ffn::forward.
    void forward(const float* x, float* y, std::int64_t tokens, const std::int32_t* ids,
                 const float* weights, std::int64_t k) const;

private:
    // A part of a layer (MoeLayer::part) runs only the chosen experts it holds.
    friend class detail::MoeLayerImpl;
    explicit Experts(std::unique_ptr<detail::ExpertsImpl> impl);
    std::unique_ptr<detail::ExpertsImpl> impl_;
};

// ---- A whole MoE layer -----------------------------------------------------

// The router, the routed experts and, where the model has them, shared
// experts that every token runs through:
//   y = Experts(x, route(x @ router^T)) + g(x) * shared(x)
// with g(x) = sigmoid(x . shared_gate) where a shared gate is given
// (Qwen2-MoE's shared_expert_gate), else 1 (DeepSeek's shared experts, one
// block of n_shared * f).
class SWIGLU_API MoeLayer {
public:
    // router: E x d (out_in, as Hugging Face's `gate.weight`) or d x E
    // (in_out), f32, E and d those of `experts`; bias: E floats (DeepSeek-V3's
    // e_score_correction_bias) or null; shared: a block of the experts' d, or
    // none; shared_gate: d floats, or null. All are copied. Throws
    // swiglu::Error(invalid_argument) naming what does not fit.
    MoeLayer(const WeightView& router, const RouterRule& rule, Experts experts,
             const float* bias = nullptr, std::unique_ptr<Ffn> shared = nullptr,
             const float* shared_gate = nullptr);
    // A part of a layer, for expert parallelism (swiglu/mpi.hpp): the whole
    // router (E x d or d x E, as above), but only routed experts [first,
    // first + experts.experts()) of its E. forward() adds the terms of the
    // chosen experts this part holds, in j order, and the shared block where
    // given; a token that chose none of them gets 0 (plus the shared
    // block). The parts of a partition of [0, E), the shared block in one of
    // them, sum to the layer. route() is the whole layer's. Throws as the
    // constructor, and invalid_argument for a range outside [0, E).
    static MoeLayer part(const WeightView& router, const RouterRule& rule, Experts experts,
                         std::int64_t first, const float* bias = nullptr,
                         std::unique_ptr<Ffn> shared = nullptr, const float* shared_gate = nullptr);
    ~MoeLayer();
    MoeLayer(MoeLayer&&) noexcept;
    MoeLayer& operator=(MoeLayer&&) noexcept;
    MoeLayer(const MoeLayer&) = delete;
    MoeLayer& operator=(const MoeLayer&) = delete;

    const Experts& experts() const;
    const RouterRule& rule() const;
    // The shared block, or null.
    const Ffn* shared() const;
    std::int64_t d() const;
    // The router's E, and the first of the routed experts held (0, and
    // experts().experts() == routed_experts(), for a whole layer).
    std::int64_t routed_experts() const;
    std::int64_t first_expert() const;

    // Each token's k experts and weights (tokens x k each), as route() gives
    // them for the router's logits x @ router^T (f32; the same bits on every
    // CPU and thread count).
    void route(const float* x, std::int64_t tokens, std::int32_t* ids, float* weights) const;
    // y = the layer's output for `tokens` rows (tokens, d); y may be x.
    // Errors as Experts::forward; bit-identical for any thread count.
    void forward(const float* x, float* y, std::int64_t tokens) const;

    // For expert parallelism (swiglu/mpi.hpp): forward()'s terms one by one,
    // to be summed elsewhere. For ids and weights (tokens x k) as route()
    // wrote them for x: each slot (t, j) whose expert this layer (or part)
    // holds gives weights[t, j] * expert_{ids[t, j]}(x[t]), d floats, into
    // `terms` in (t, j) order (held_slots rows); where the layer has a
    // shared block, g(x[t]) * shared(x[t]) goes into shared_terms (tokens,
    // d; else unused, may be null). forward() of the whole layer is, per
    // token, bit for bit: y = the j = 0 term, then y = y + the j-th term
    // for j = 1 .. k - 1, then y = y + the shared term, each sum rounded to
    // f32. An id outside [0, E) or a non-finite weight is invalid_argument,
    // nothing written. The buffers must not overlap x.
    void terms(const float* x, std::int64_t tokens, const std::int32_t* ids, const float* weights,
               float* terms, float* shared_terms) const;
    // How many of the tokens * k slots of ids this layer (part) holds: the
    // rows terms() writes.
    std::int64_t held_slots(const std::int32_t* ids, std::int64_t tokens) const;

private:
    explicit MoeLayer(std::unique_ptr<detail::MoeLayerImpl> impl);
    std::unique_ptr<detail::MoeLayerImpl> impl_;
};

}  // namespace swiglu
