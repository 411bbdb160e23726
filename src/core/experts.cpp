// Routed experts (swiglu/moe.hpp): Experts' construction, accessors and the
// checks of forward's arguments; the forward itself: experts_forward.cpp.
#include <swiglu/moe.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "common/messages.hpp"
#include "core/experts_impl.hpp"
#include "core/ffn_impl.hpp"

namespace swiglu {

using detail::errors_as_swiglu;
using detail::invalid;

namespace {

std::string shape_of(const Ffn& ffn) {
    return "(d = " + std::to_string(ffn.d()) + ", f = " + std::to_string(ffn.f()) + ")";
}

// Expert `index`'s Ffn; its errors name the expert, so that a caller with
// 64 experts knows which one is bad ("Experts: expert 5: gate: data is null").
Ffn build_expert(const ExpertWeights& w, std::size_t index, const Options& options) {
    try {
        return Ffn(w.gate, w.up, w.down, options);
    } catch (const Error& e) {
        std::string message = e.what();
        if (message.rfind("Ffn: ", 0) == 0) message.erase(0, 5);
        throw Error(e.status(), "Experts: expert " + std::to_string(index) + ": " + message);
    }
}

std::unique_ptr<detail::ExpertsImpl> build(const std::vector<ExpertWeights>& weights,
                                           const Options& options) {
    if (weights.empty()) invalid("Experts: experts is empty; need at least 1 expert");
    return errors_as_swiglu("Experts", [&] {
        std::vector<Ffn> experts;
        experts.reserve(weights.size());
        for (std::size_t e = 0; e < weights.size(); ++e) {
            experts.push_back(build_expert(weights[e], e, options));
            // Checked as each is built: a bad shape fails before the rest are packed.
            const Ffn &first = experts.front(), &last = experts.back();
            if (last.d() != first.d() || last.f() != first.f())
                invalid("Experts: expert " + std::to_string(e) + " is " + shape_of(last) +
                        ", expert 0 is " + shape_of(first) + ": every expert must have one shape");
        }
        return std::make_unique<detail::ExpertsImpl>(std::move(experts));
    });
}

const detail::ExpertsImpl& live(const std::unique_ptr<detail::ExpertsImpl>& impl) {
    if (!impl) invalid("Experts: used after being moved from");
    return *impl;
}

bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
    const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
    return pa < pb + b_bytes && pb < pa + a_bytes;
}

// A refused forward call; the message is built only here, so that a call
// that passes its checks allocates nothing.
[[noreturn]] void refuse(const std::string& what) { invalid("Experts::forward: " + what); }

// Checks a forward call's arguments, all of them before anything is
// written; returns false when there is nothing to do.
bool check_forward(const detail::ExpertsImpl& impl, const float* x, const float* y,
                   std::int64_t tokens, const std::int32_t* ids, const float* weights,
                   std::int64_t k) {
    if (tokens < 0) refuse("tokens must be >= 0 (got " + std::to_string(tokens) + ")");
    if (tokens == 0) return false;
    if (!x) refuse("x is null");
    if (!y) refuse("y is null");
    if (!ids) refuse("ids is null");
    if (!weights) refuse("weights is null");
    if (k < 1) refuse("k must be >= 1 (got " + std::to_string(k) + ")");
    // The scratch holds tokens * k rows of d floats; tokens * d <= that.
    std::int64_t slots = 0, elems = 0;
    if (__builtin_mul_overflow(tokens, k, &slots) ||
        __builtin_mul_overflow(slots, impl.d, &elems) ||
        elems > std::numeric_limits<std::int64_t>::max() / std::int64_t{sizeof(float)})
        refuse("tokens * k * d = " + std::to_string(tokens) + " * " + std::to_string(k) + " * " +
               std::to_string(impl.d) + " overflows");
    const auto x_bytes = static_cast<std::size_t>(tokens * impl.d) * sizeof(float);
    const auto slot_bytes = static_cast<std::size_t>(slots) * sizeof(float);
    static_assert(sizeof(std::int32_t) == sizeof(float));
    if (x != y && overlap(x, x_bytes, y, x_bytes))
        refuse("x and y overlap; y must be x itself or a separate buffer");
    // y is written while weights are still read. ids are read before, but the
    // rule stays the header's: y may be x, any other overlap is refused.
    if (overlap(y, x_bytes, ids, slot_bytes)) refuse("y overlaps ids");
    if (overlap(y, x_bytes, weights, slot_bytes)) refuse("y overlaps weights");

    detail::check_routing("Experts::forward", ids, weights, tokens, k,
                          static_cast<std::int64_t>(impl.experts.size()));
    return true;
}

}  // namespace

void detail::check_routing(const char* who, const std::int32_t* ids, const float* weights,
                           std::int64_t tokens, std::int64_t k, std::int64_t experts) {
    const auto refused = [&](const std::string& what) { invalid(std::string(who) + ": " + what); };
    for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t j = 0; j < k; ++j) {
            const std::int32_t id = ids[t * k + j];
            if (id < 0 || id >= experts)
                refused("ids[t = " + std::to_string(t) + ", j = " + std::to_string(j) +
                        "] = " + std::to_string(id) + " is not an expert: ids must be in [0, " +
                        std::to_string(experts) + ")");
            const float w = weights[t * k + j];
            if (!std::isfinite(w))
                refused("weights[t = " + std::to_string(t) + ", j = " + std::to_string(j) +
                        "] = " + std::to_string(w) + " must be finite");
        }
}

Experts::Experts(const std::vector<ExpertWeights>& experts, const Options& options)
    : Experts(build(experts, options)) {}

Experts::Experts(std::vector<Ffn> blocks)
    : Experts([&] {
          if (blocks.empty()) invalid("Experts: blocks is empty; need at least 1 expert");
          const Ffn& first = blocks.front();
          for (std::size_t e = 1; e < blocks.size(); ++e) {
              const Ffn& b = blocks[e];
              if (b.d() != first.d() || b.f() != first.f())
                  invalid("Experts: block " + std::to_string(e) + " is " + shape_of(b) +
                          ", block 0 is " + shape_of(first) + ": every expert must have one shape");
              // One pool drives them all (experts_forward.cpp).
              if (b.threads() != first.threads())
                  invalid("Experts: block " + std::to_string(e) + " runs on " +
                          std::to_string(b.threads()) + " threads, block 0 on " +
                          std::to_string(first.threads()) + ": every expert must have one count");
          }
          return errors_as_swiglu(
              "Experts", [&] { return std::make_unique<detail::ExpertsImpl>(std::move(blocks)); });
      }()) {}

Experts::Experts(std::unique_ptr<detail::ExpertsImpl> impl) : impl_(std::move(impl)) {}

Experts Experts::stacked(const float* gate, const float* up, const float* down,
                         std::int64_t experts, std::int64_t d, std::int64_t f, Layout layout,
                         const Options& options) {
    const std::string who = "Experts::stacked: ";
    if (experts < 1) invalid(who + "experts must be >= 1 (got " + std::to_string(experts) + ")");
    if (d < 1 || f < 1)
        invalid(who + "d and f must be >= 1 (got d = " + std::to_string(d) +
                ", f = " + std::to_string(f) + ")");
    if (layout != Layout::out_in && layout != Layout::in_out)
        invalid(who + "layout must be Layout::out_in or Layout::in_out (got " +
                std::to_string(static_cast<int>(layout)) + ")");
    if (!gate) invalid(who + "gate is null");
    if (!up) invalid(who + "up is null");
    if (!down) invalid(who + "down is null");
    std::int64_t per = 0, all = 0;
    if (__builtin_mul_overflow(d, f, &per) || __builtin_mul_overflow(per, experts, &all) ||
        all > std::numeric_limits<std::int64_t>::max() / std::int64_t{sizeof(float)})
        invalid(who + "experts * d * f = " + std::to_string(experts) + " * " + std::to_string(d) +
                " * " + std::to_string(f) + " floats overflows");
    const std::vector<ExpertWeights> views = errors_as_swiglu("Experts::stacked", [&] {
        std::vector<ExpertWeights> v(static_cast<std::size_t>(experts));
        for (std::int64_t e = 0; e < experts; ++e) {
            const std::int64_t at = e * per;
            ExpertWeights& w = v[static_cast<std::size_t>(e)];
            if (layout == Layout::out_in) {
                w.gate = WeightView::out_in(gate + at, f, d);
                w.up = WeightView::out_in(up + at, f, d);
                w.down = WeightView::out_in(down + at, d, f);
            } else {
                w.gate = WeightView::in_out(gate + at, d, f);
                w.up = WeightView::in_out(up + at, d, f);
                w.down = WeightView::in_out(down + at, f, d);
            }
        }
        return v;
    });
    return Experts(views, options);
}

Experts::~Experts() = default;
Experts::Experts(Experts&&) noexcept = default;
Experts& Experts::operator=(Experts&&) noexcept = default;

std::int64_t Experts::experts() const {
    return static_cast<std::int64_t>(live(impl_).experts.size());
}
std::int64_t Experts::d() const { return live(impl_).d; }
std::int64_t Experts::f() const { return live(impl_).f; }
int Experts::threads() const { return live(impl_).threads; }
// Every expert is built from the same options on one CPU: the first speaks for all.
Implementation Experts::implementation() const {
    return live(impl_).experts.front().implementation();
}

void Experts::forward(const float* x, float* y, std::int64_t tokens, const std::int32_t* ids,
                      const float* weights, std::int64_t k) const {
    const detail::ExpertsImpl& impl = live(impl_);
    if (!check_forward(impl, x, y, tokens, ids, weights, k)) return;
    errors_as_swiglu("Experts::forward", [&] { impl.forward(x, y, tokens, ids, weights, k); });
}

}  // namespace swiglu
