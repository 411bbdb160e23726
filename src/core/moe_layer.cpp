// A whole MoE layer (swiglu/moe.hpp): the router's logits on our f32 panel
// kernels, route(), the routed experts, and the shared block.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/messages.hpp"
#include "core/ffn_impl.hpp"
#include "kernels/panel_gemm.hpp"
#include "swiglu/moe.hpp"

namespace swiglu {
namespace detail {

class MoeLayerImpl {
public:
    MoeLayerImpl(const WeightView& router, const RouterRule& rule, Experts experts,
                 const float* bias, std::unique_ptr<Ffn> shared, const float* shared_gate);

    void route(const float* x, std::int64_t tokens, std::int32_t* ids, float* weights) const {
        lease([&](Scratch& s) { route(x, tokens, ids, weights, s.logits); });
    }
    void forward(const float* x, float* y, std::int64_t tokens) const;
    std::int64_t experts_count() const { return e_; }

    Experts experts;
    RouterRule rule;
    std::unique_ptr<Ffn> shared;

private:
    // What one call needs besides x and y, grown to the largest call seen
    // and kept: after a layer's first call at a token count, its calls
    // allocate nothing (where no other call holds the slot meanwhile).
    struct Scratch {
        std::vector<float> logits, weights, shared_y;
        std::vector<std::int32_t> ids;
        std::atomic<bool> busy{false};
    };
    template <class Run>
    void lease(Run&& run) const;
    void route(const float* x, std::int64_t tokens, std::int32_t* ids, float* weights,
               std::vector<float>& logits) const;

    std::int64_t d_, e_;
    AlignedBuffer<unsigned char> router_;  // d x E in f32 panels (kernels/panel_gemm.hpp)
    std::vector<float> bias_, shared_gate_;
    mutable Scratch scratch_[4];
};

namespace {

std::string count_text(std::int64_t n) { return std::to_string(n); }

}  // namespace

MoeLayerImpl::MoeLayerImpl(const WeightView& router, const RouterRule& rule_, Experts experts_,
                           const float* bias, std::unique_ptr<Ffn> shared_,
                           const float* shared_gate)
    : experts(std::move(experts_)),
      rule(rule_),
      shared(std::move(shared_)),
      d_(experts.d()),
      e_(experts.experts()) {
    if (router.layout != Layout::out_in && router.layout != Layout::in_out)
        invalid("MoeLayer: router.layout must be Layout::out_in or Layout::in_out");
    if (!router.data) invalid("MoeLayer: router.data is null");
    if (router.in_features() != d_ || router.out_features() != e_)
        invalid("MoeLayer: router is (" + count_text(router.rows) + ", " +
                count_text(router.cols) + ") " +
                (router.layout == Layout::out_in ? "out_in" : "in_out") + ", must map d = " +
                count_text(d_) + " to E = " + count_text(e_) + " experts");
    // route() checks the rule against E; a layer with a bad rule is refused
    // now, not at its first call.
    {
        std::vector<float> logits(static_cast<std::size_t>(e_), 0.0f);
        std::vector<std::int32_t> ids(static_cast<std::size_t>(std::max<std::int64_t>(rule.top_k, 1)));
        std::vector<float> w(ids.size());
        swiglu::route(logits.data(), 1, e_, rule, nullptr, ids.data(), w.data());
    }
    if (bias) {
        bias_.assign(bias, bias + e_);
        for (std::int64_t e = 0; e < e_; ++e)
            if (!std::isfinite(bias_[std::size_t(e)]))
                invalid("MoeLayer: bias[" + count_text(e) + "] = " +
                        std::to_string(bias_[std::size_t(e)]) + " is not finite");
    }
    if (shared && shared->d() != d_)
        invalid("MoeLayer: the shared block's d = " + count_text(shared->d()) +
                " differs from the experts' d = " + count_text(d_));
    if (shared_gate) {
        if (!shared) invalid("MoeLayer: shared_gate is given without a shared block");
        shared_gate_.assign(shared_gate, shared_gate + d_);
    }
    // The router as (d x E) panels: in_out is that already; out_in (E x d)
    // is transposed first.
    std::vector<float> plain(static_cast<std::size_t>(d_ * e_));
    for (std::int64_t i = 0; i < d_; ++i)
        for (std::int64_t e = 0; e < e_; ++e)
            plain[std::size_t(i * e_ + e)] = router.layout == Layout::in_out
                                                 ? router.data[i * e_ + e]
                                                 : router.data[e * d_ + i];
    router_ = AlignedBuffer<unsigned char>(panel_tile_bytes(PanelType::f32, d_, e_));
    pack_panels(PanelType::f32, plain.data(), d_, e_, router_.data());
}

template <class Run>
void MoeLayerImpl::lease(Run&& run) const {
    for (Scratch& s : scratch_) {
        if (s.busy.exchange(true, std::memory_order_acquire)) continue;
        struct Release {
            Scratch& s;
            ~Release() { s.busy.store(false, std::memory_order_release); }
        } release{s};
        run(s);
        return;
    }
    // More concurrent callers than slots: this call pays for its own.
    Scratch own;
    run(own);
}

void MoeLayerImpl::route(const float* x, std::int64_t tokens, std::int32_t* ids, float* weights,
                         std::vector<float>& logits) const {
    logits.resize(static_cast<std::size_t>(tokens * e_));
    panel_kernels().f32.gemm(router_.data(), d_, e_, x, d_, tokens, logits.data(), e_);
    for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t e = 0; e < e_; ++e)
            if (std::isnan(logits[std::size_t(t * e_ + e)]))
                invalid("MoeLayer: token " + count_text(t) +
                        "'s router logits hold NaN (x holds NaN or infinities): no expert ranks");
    swiglu::route(logits.data(), tokens, e_, rule, bias_.empty() ? nullptr : bias_.data(), ids,
                  weights);
}

void MoeLayerImpl::forward(const float* x, float* y, std::int64_t tokens) const {
    const std::int64_t k = rule.top_k;
    lease([&](Scratch& s) {
        s.ids.resize(static_cast<std::size_t>(tokens * k));
        s.weights.resize(s.ids.size());
        route(x, tokens, s.ids.data(), s.weights.data(), s.logits);
        // The shared block reads x before the experts may overwrite it (y == x).
        if (shared) {
            s.shared_y.resize(static_cast<std::size_t>(tokens * d_));
            shared->forward(x, s.shared_y.data(), tokens);
            if (!shared_gate_.empty())
                for (std::int64_t t = 0; t < tokens; ++t) {
                    // sigmoid(x . gate) in f32, inputs in order: one
                    // token's scale, the same for any thread count.
                    float dot = 0;
                    for (std::int64_t i = 0; i < d_; ++i)
                        dot = std::fma(x[t * d_ + i], shared_gate_[std::size_t(i)], dot);
                    const float g = 1.0f / (1.0f + std::exp(-dot));
                    for (std::int64_t i = 0; i < d_; ++i) s.shared_y[std::size_t(t * d_ + i)] *= g;
                }
        }
        experts.forward(x, y, tokens, s.ids.data(), s.weights.data(), k);
        if (shared)
            for (std::int64_t i = 0; i < tokens * d_; ++i) y[i] += s.shared_y[std::size_t(i)];
    });
}

}  // namespace detail

MoeLayer::MoeLayer(const WeightView& router, const RouterRule& rule, Experts experts,
                   const float* bias, std::unique_ptr<Ffn> shared, const float* shared_gate)
    : impl_(detail::errors_as_swiglu("MoeLayer", [&] {
          return std::make_unique<detail::MoeLayerImpl>(router, rule, std::move(experts), bias,
                                                        std::move(shared), shared_gate);
      })) {}

MoeLayer::~MoeLayer() = default;
MoeLayer::MoeLayer(MoeLayer&&) noexcept = default;
MoeLayer& MoeLayer::operator=(MoeLayer&&) noexcept = default;

static const detail::MoeLayerImpl& live(const std::unique_ptr<detail::MoeLayerImpl>& impl) {
    if (!impl) throw Error(Status::invalid_argument, "MoeLayer: used after being moved from");
    return *impl;
}

const Experts& MoeLayer::experts() const { return live(impl_).experts; }
const RouterRule& MoeLayer::rule() const { return live(impl_).rule; }
const Ffn* MoeLayer::shared() const { return live(impl_).shared.get(); }
std::int64_t MoeLayer::d() const { return live(impl_).experts.d(); }

namespace {

// The checks of a layer call: tokens, pointers, sizes; false when there is
// nothing to do.
bool check_call(const char* what, const detail::MoeLayerImpl& impl, std::int64_t tokens,
                const void* x, const void* out) {
    if (tokens < 0)
        detail::invalid(std::string("MoeLayer::") + what + ": tokens must be >= 0 (got " +
                        std::to_string(tokens) + ")");
    if (tokens == 0) return false;
    if (!x) detail::invalid(std::string("MoeLayer::") + what + ": x is null");
    if (!out) detail::invalid(std::string("MoeLayer::") + what + ": the output is null");
    // The widest per-token row the call holds: d (x, y), E (logits) or k.
    const std::int64_t row = std::max({impl.experts.d(), impl.experts_count(), impl.rule.top_k});
    std::int64_t n = 0;
    if (__builtin_mul_overflow(tokens, row, &n) ||
        n > std::numeric_limits<std::int64_t>::max() / std::int64_t{sizeof(float)})
        detail::invalid(std::string("MoeLayer::") + what + ": tokens = " + std::to_string(tokens) +
                        " times a row of " + std::to_string(row) + " overflows");
    return true;
}

}  // namespace

void MoeLayer::route(const float* x, std::int64_t tokens, std::int32_t* ids,
                     float* weights) const {
    const detail::MoeLayerImpl& impl = live(impl_);
    if (!check_call("route", impl, tokens, x, ids)) return;
    if (!weights) detail::invalid("MoeLayer::route: weights is null");
    detail::errors_as_swiglu("MoeLayer::route", [&] { impl.route(x, tokens, ids, weights); });
}

void MoeLayer::forward(const float* x, float* y, std::int64_t tokens) const {
    const detail::MoeLayerImpl& impl = live(impl_);
    if (!check_call("forward", impl, tokens, x, y)) return;
    detail::errors_as_swiglu("MoeLayer::forward", [&] { impl.forward(x, y, tokens); });
}

}  // namespace swiglu
