// The public C++ API, forward: validation, and the calls into FfnImpl
// (ffn_impl.hpp). The backward's: ffn_backward.cpp.
#include <swiglu/swiglu.hpp>

#include <limits>

#include "common/messages.hpp"
#include "core/cpu_info.hpp"
#include "core/ffn_access.hpp"
#include "core/ffn_impl.hpp"
#include "kernels/f32_silu_mul.hpp"
#include "onednn/matmul.hpp"

namespace swiglu {

std::int64_t llama_hidden(std::int64_t d) {
    if (d < 1 || d > std::numeric_limits<std::int64_t>::max() / 8)
        throw Error(Status::invalid_argument,
                    "llama_hidden: d must be in [1, 2^60] (got " + std::to_string(d) + ")");
    return 8 * d / 3;
}

std::int64_t parameter_count(std::int64_t d, std::int64_t f) {
    std::int64_t df = 0, n = 0;
    if (d < 0 || f < 0 || __builtin_mul_overflow(d, f, &df) || __builtin_mul_overflow(df, 3, &n))
        throw Error(Status::invalid_argument, "parameter_count: d = " + std::to_string(d) +
                                                  ", f = " + std::to_string(f) +
                                                  " must be >= 0 and 3 d f must fit in 64 bits");
    return n;
}

namespace {

// The largest thread count we accept: beyond this it is a mistake, not a machine.
constexpr int kMaxThreads = 4096;

using detail::invalid;

// A view as the caller passed it, "(rows, cols) layout": the messages name
// what the caller wrote, not the (in, out) it means.
std::string view_text(const detail::WeightSource& w) {
    return "(" + std::to_string(w.rows) + ", " + std::to_string(w.cols) + ") " +
           (w.layout == Layout::out_in ? "out_in" : "in_out");
}

void check_view(const char* name, const detail::WeightSource& w) {
    const std::string who = std::string("Ffn: ") + name;
    if (w.layout != Layout::out_in && w.layout != Layout::in_out)
        invalid(who + ": layout must be Layout::out_in or Layout::in_out (got " +
                std::to_string(static_cast<int>(w.layout)) + ")");
    if (w.rows < 1 || w.cols < 1)
        invalid(who + ": rows and cols must be >= 1 (got " + view_text(w) + ")");
    if (!w.data) invalid(who + ": data is null");
    const detail::FormatTraits& format = detail::traits(w.type);
    if (w.stored_cols() % format.block != 0)
        invalid(who + ": rows of " + std::to_string(w.stored_cols()) +
                " values are not whole blocks of " + std::to_string(format.block) + " (" +
                format.stored_name + ")");
}

// Returns (d, f) after checking the three views agree and every size we will
// compute with fits: 4 * 3 * d * f bytes must not overflow.
void check_weights(const detail::WeightSource& gate, const detail::WeightSource& up,
                   const detail::WeightSource& down) {
    check_view("gate", gate);
    check_view("up", up);
    check_view("down", down);
    const std::int64_t d = gate.in_features(), f = gate.out_features();
    const std::string expect_df =
        "(in d = " + std::to_string(d) + ", out f = " + std::to_string(f) + ")";
    if (up.in_features() != d || up.out_features() != f)
        invalid("Ffn: up is " + view_text(up) + ", must map like gate " + expect_df);
    if (down.in_features() != f || down.out_features() != d)
        invalid("Ffn: down is " + view_text(down) + ", must map f -> d: (in " + std::to_string(f) +
                ", out " + std::to_string(d) + ")");
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(d, f, &bytes) || __builtin_mul_overflow(bytes, 12, &bytes) ||
        d > (std::int64_t{1} << 40) || f > (std::int64_t{1} << 40))
        invalid("Ffn: d = " + std::to_string(d) + ", f = " + std::to_string(f) +
                ": the weights' byte size overflows 64 bits");
}

void check_dtype(Dtype dtype, const char* field) {
    for (Dtype known : kDtypes)
        if (dtype == known) return;
    invalid(std::string("Ffn: options.") + field + " must be Dtype::" + dtype_names() + " (got " +
            std::to_string(static_cast<int>(dtype)) + ")");
}

// down's format: options.down_dtype where set, which may differ from dtype
// among the block formats only (they share the grouped engine, each phase
// quantising its inputs for its own weights).
Dtype check_down_dtype(const Options& options) {
    check_dtype(options.dtype, "dtype");
    if (!options.down_dtype) return options.dtype;
    const Dtype down = *options.down_dtype;
    check_dtype(down, "down_dtype");
    if (down != options.dtype && !(is_block_dtype(options.dtype) && is_block_dtype(down)))
        invalid(std::string("Ffn: options.down_dtype ") + dtype_name(down) +
                " differs from options.dtype " + dtype_name(options.dtype) +
                ": a block's weights may differ in format only among the block formats "
                "(q8_0, q4_0, q4_k, q5_k, q6_k)");
    return down;
}

void check_policy(const BuildPolicy& p) {
    const int prefill = static_cast<int>(p.grouped_prefill);
    if (prefill < static_cast<int>(GroupedPrefill::automatic) ||
        prefill > static_cast<int>(GroupedPrefill::bf16))
        invalid("Ffn: options.build.grouped_prefill must be a GroupedPrefill (got " +
                std::to_string(prefill) + ")");
    if (p.int8_own_rows < -1 || p.int8_own_rows > 64)
        invalid(
            "Ffn: options.build.int8_own_rows must be -1 (the library's choice), 0 (none) or "
            "up to 64 rows (got " +
            std::to_string(p.int8_own_rows) + ")");
    if (p.bf16_own_rows < -1 || p.bf16_own_rows > 1)
        invalid(
            "Ffn: options.build.bf16_own_rows must be -1 (the library's choice), 0 (none) or 1 "
            "(got " +
            std::to_string(p.bf16_own_rows) + ")");
}

int resolve_threads(int threads) {
    if (threads == 0) return detail::available_cores();
    if (threads < 0 || threads > kMaxThreads)
        invalid("Ffn: options.threads must be 0 (all cores) or in [1, " +
                std::to_string(kMaxThreads) + "] (got " + std::to_string(threads) + ")");
    return threads;
}

}  // namespace

namespace detail {

void FfnImpl::forward(const float* x, float* y, std::int64_t tokens, const TraceSink* trace) const {
    lease([&](Slot& slot, ThreadPool* workers, int count) {
        if (!slot.workspace) slot.workspace = std::make_unique<Workspace>(block, count);
        run_block(block, *slot.workspace, workers, x, y, tokens, trace);
    });
}

}  // namespace detail

using detail::errors_as_swiglu;

Ffn::Ffn(const WeightView& gate, const WeightView& up, const WeightView& down,
         const Options& options)
    : Ffn(detail::FfnAccess::make(detail::WeightSource::from(gate), detail::WeightSource::from(up),
                                  detail::WeightSource::from(down), options)) {}

Ffn::Ffn(std::unique_ptr<detail::FfnImpl> impl) : impl_(std::move(impl)) {}

Ffn detail::FfnAccess::make(const WeightSource& gate, const WeightSource& up,
                            const WeightSource& down, const Options& options) {
    check_weights(gate, up, down);
    const Dtype down_dtype = check_down_dtype(options);
    check_policy(options.build);
    const int threads = resolve_threads(options.threads);
    return Ffn(errors_as_swiglu("Ffn", [&] {
        return std::make_unique<detail::FfnImpl>(gate, up, down, threads, options.dtype, down_dtype,
                                                 options.build);
    }));
}

Ffn::~Ffn() = default;
Ffn::Ffn(Ffn&&) noexcept = default;
Ffn& Ffn::operator=(Ffn&&) noexcept = default;

static const detail::FfnImpl& live(const std::unique_ptr<detail::FfnImpl>& impl) {
    if (!impl) throw Error(Status::invalid_argument, "Ffn: used after being moved from");
    return *impl;
}

std::int64_t Ffn::d() const { return live(impl_).block.d; }
std::int64_t Ffn::f() const { return live(impl_).block.f; }
int Ffn::threads() const { return live(impl_).threads; }

Implementation Ffn::implementation() const {
    const detail::FfnImpl& impl = live(impl_);
    return {impl.block.dtype(), impl.block.down_dtype(), impl.block.implementation,
            detail::kernels_isa_name(), impl.threads};
}

namespace {
// Checks a forward call's arguments; returns false when there is nothing to do.
bool check_forward(const detail::FfnImpl& impl, const float* x, const float* y,
                   std::int64_t tokens) {
    const std::int64_t d = impl.block.d;
    if (tokens < 0) invalid("forward: tokens must be >= 0 (got " + std::to_string(tokens) + ")");
    if (tokens == 0) return false;
    if (!x) invalid("forward: x is null");
    if (!y) invalid("forward: y is null");
    std::int64_t elems = 0;
    if (__builtin_mul_overflow(tokens, d, &elems) ||
        elems > std::numeric_limits<std::int64_t>::max() / std::int64_t{sizeof(float)})
        invalid("forward: tokens * d = " + std::to_string(tokens) + " * " + std::to_string(d) +
                " overflows");
    const auto xa = reinterpret_cast<std::uintptr_t>(x), ya = reinterpret_cast<std::uintptr_t>(y);
    const auto bytes = static_cast<std::uintptr_t>(elems) * sizeof(float);
    if (xa != ya && xa < ya + bytes && ya < xa + bytes)
        invalid("forward: x and y overlap; y must be x itself or a separate buffer");
    return true;
}
}  // namespace

void Ffn::forward(const float* x, float* y, std::int64_t tokens) const {
    const detail::FfnImpl& impl = live(impl_);
    if (!check_forward(impl, x, y, tokens)) return;
    errors_as_swiglu("forward", [&] { impl.forward(x, y, tokens, nullptr); });
}

void Ffn::forward_traced(const float* x, float* y, std::int64_t tokens, Trace& trace) const {
    const detail::FfnImpl& impl = live(impl_);
    const bool work = check_forward(impl, x, y, tokens);
    const auto f = static_cast<std::size_t>(impl.block.f),
               d = static_cast<std::size_t>(impl.block.d);
    const auto m = static_cast<std::size_t>(tokens);
    errors_as_swiglu("forward_traced", [&] {
        trace.gate.assign(m * f, 0.0f);
        trace.up.assign(m * f, 0.0f);
        trace.act.assign(m * f, 0.0f);
        if (!work) {
            trace.down.clear();
            return;
        }
        const detail::TraceSink sink{trace.gate.data(), trace.up.data(), trace.act.data()};
        impl.forward(x, y, tokens, &sink);
        trace.down.assign(y, y + m * d);
    });
}

void Ffn::forward(const float* x, float* y, std::int64_t batch, std::int64_t seq) const {
    std::int64_t tokens = 0;
    if (batch < 0 || seq < 0)
        invalid("forward: batch and seq must be >= 0 (got " + std::to_string(batch) + ", " +
                std::to_string(seq) + ")");
    if (__builtin_mul_overflow(batch, seq, &tokens)) invalid("forward: batch * seq overflows");
    forward(x, y, tokens);
}

}  // namespace swiglu
