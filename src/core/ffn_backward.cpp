// The public C++ API, backward: argument checks, and the backward's lease
// on a slot (ffn_impl.hpp). The pass itself: backward.hpp.
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>

#include <swiglu/swiglu.hpp>

#include "common/messages.hpp"
#include "core/ffn_impl.hpp"

namespace swiglu {

namespace detail {

const BackwardBlock& FfnImpl::backward_block() const {
    std::call_once(backward_once_,
                   [this] { backward_ = std::make_unique<BackwardBlock>(block, layouts); });
    return *backward_;
}

void FfnImpl::backward(const float* x, const float* dy, float* dx, std::int64_t tokens,
                       const GradientSink& sink, const float* saved) const {
    const BackwardBlock& bb = backward_block();
    lease([&](Slot& slot, ThreadPool* workers, int count) {
        if (!slot.workspace) slot.workspace = std::make_unique<Workspace>(block, count);
        if (!slot.backward) slot.backward = std::make_unique<BackwardWorkspace>(bb, count);
        run_backward(bb, *slot.backward, block, *slot.workspace, workers, x, dy, dx, tokens, sink,
                     saved);
    });
}

}  // namespace detail

namespace {

using detail::errors_as_swiglu;
using detail::invalid;

const detail::FfnImpl& live_impl(const std::unique_ptr<detail::FfnImpl>& impl) {
    if (!impl) invalid("Ffn: used after being moved from");
    return *impl;
}

void require_f32(const detail::FfnImpl& impl, const char* what) {
    const Dtype dtype = impl.block.dtype();
    if (dtype != Dtype::f32)
        throw Error(Status::unsupported, std::string(what) +
                                             ": needs an Ffn of dtype f32 (this one is " +
                                             dtype_name(dtype) + ")");
}

// elements * 4 bytes, or an error naming the product. `what` is a C string:
// a std::string parameter would be built (and allocated: most names pass
// SSO's 15 characters) on every call.
std::int64_t byte_size(std::int64_t a, std::int64_t b, const char* what) {
    std::int64_t n = 0;
    if (__builtin_mul_overflow(a, b, &n) ||
        n > std::numeric_limits<std::int64_t>::max() / std::int64_t{sizeof(float)})
        invalid(std::string(what) + " = " + std::to_string(a) + " * " + std::to_string(b) +
                " overflows");
    return n * std::int64_t{sizeof(float)};
}

// The buffers of one call: any two that overlap are an error, except pairs
// the call allows to be the same buffer exactly. Initializer lists: no
// allocation on the call's path.
struct Buffer {
    const char* name;
    const void* data;
    std::int64_t bytes;
};
struct Alias {
    const char* a;
    const char* b;
};

bool allowed(const Buffer& p, const Buffer& q, std::initializer_list<Alias> may_alias) {
    if (p.data != q.data || p.bytes != q.bytes) return false;
    for (const Alias& m : may_alias)
        if ((!std::strcmp(m.a, p.name) && !std::strcmp(m.b, q.name)) ||
            (!std::strcmp(m.a, q.name) && !std::strcmp(m.b, p.name)))
            return true;
    return false;
}

void check_overlaps(const char* what, std::initializer_list<Buffer> buffers,
                    std::initializer_list<Alias> may_alias) {
    for (auto i = buffers.begin(); i != buffers.end(); ++i)
        for (auto j = i + 1; j != buffers.end(); ++j) {
            if (!i->data || !j->data) continue;
            const auto pa = reinterpret_cast<std::uintptr_t>(i->data),
                       pb = reinterpret_cast<std::uintptr_t>(j->data);
            const bool overlap = pa < pb + static_cast<std::uintptr_t>(j->bytes) &&
                                 pb < pa + static_cast<std::uintptr_t>(i->bytes);
            if (overlap && !allowed(*i, *j, may_alias))
                invalid(std::string(what) + ": " + i->name + " and " + j->name + " overlap" +
                        (may_alias.size() > 1 ? " (only dx may be x or dy itself)" : ""));
        }
}

}  // namespace

Layout Ffn::layout(Weight weight) const {
    const detail::FfnImpl& impl = live_impl(impl_);
    switch (weight) {
        case Weight::gate: return impl.layouts[0];
        case Weight::up: return impl.layouts[1];
        case Weight::down: return impl.layouts[2];
    }
    invalid("layout: weight must be Weight::gate, up or down");
}

std::int64_t Ffn::saved_floats(std::int64_t tokens) const {
    const detail::FfnImpl& impl = live_impl(impl_);
    if (tokens < 0)
        invalid("saved_floats: tokens must be >= 0 (got " + std::to_string(tokens) + ")");
    return byte_size(tokens, 2 * impl.block.f, "saved_floats: tokens * 2f") /
           std::int64_t{sizeof(float)};
}

void Ffn::enable_backward() const {
    const detail::FfnImpl& impl = live_impl(impl_);
    require_f32(impl, "enable_backward");
    errors_as_swiglu("enable_backward", [&] { impl.backward_block(); });
}

void Ffn::forward_for_backward(const float* x, float* y, float* saved, std::int64_t tokens) const {
    const detail::FfnImpl& impl = live_impl(impl_);
    require_f32(impl, "forward_for_backward");
    if (tokens < 0)
        invalid("forward_for_backward: tokens must be >= 0 (got " + std::to_string(tokens) + ")");
    if (tokens == 0) return;
    const std::int64_t d = impl.block.d, f = impl.block.f;
    if (!x) invalid("forward_for_backward: x is null");
    if (!y) invalid("forward_for_backward: y is null");
    if (!saved) invalid("forward_for_backward: saved is null");
    const std::int64_t rows = byte_size(tokens, d, "forward_for_backward: tokens * d");
    const std::int64_t kept = byte_size(tokens, 2 * f, "forward_for_backward: tokens * 2f");
    check_overlaps("forward_for_backward", {{"x", x, rows}, {"y", y, rows}, {"saved", saved, kept}},
                   {{"x", "y"}});
    errors_as_swiglu("forward_for_backward", [&] {
        const detail::TraceSink keep{saved, saved + tokens * f, nullptr};
        impl.forward(x, y, tokens, &keep);
    });
}

void Ffn::backward(const float* x, const float* dy, float* dx, std::int64_t tokens,
                   const Gradients& grads, const float* saved) const {
    const detail::FfnImpl& impl = live_impl(impl_);
    require_f32(impl, "backward");
    if (tokens < 0) invalid("backward: tokens must be >= 0 (got " + std::to_string(tokens) + ")");
    const std::int64_t d = impl.block.d, f = impl.block.f;
    const std::int64_t weight = byte_size(d, f, "backward: d * f");
    if (tokens == 0) {  // the gradient of no tokens is zero
        if (!grads.accumulate)
            for (float* g : {grads.gate, grads.up, grads.down})
                if (g) std::memset(g, 0, static_cast<std::size_t>(weight));
        return;
    }
    if (!x) invalid("backward: x is null");
    if (!dy) invalid("backward: dy is null");
    if (!dx) invalid("backward: dx is null");
    const std::int64_t rows = byte_size(tokens, d, "backward: tokens * d");
    const std::int64_t kept = byte_size(tokens, 2 * f, "backward: tokens * 2f");
    check_overlaps("backward",
                   {{"x", x, rows},
                    {"dy", dy, rows},
                    {"dx", dx, rows},
                    {"saved", saved, kept},
                    {"grads.gate", grads.gate, weight},
                    {"grads.up", grads.up, weight},
                    {"grads.down", grads.down, weight}},
                   {{"dx", "x"}, {"dx", "dy"}, {"x", "dy"}});
    errors_as_swiglu("backward", [&] {
        impl.backward(x, dy, dx, tokens,
                      detail::GradientSink{grads.gate, grads.up, grads.down, grads.accumulate},
                      saved);
    });
}

}  // namespace swiglu
