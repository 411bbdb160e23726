// ShardedMoeLayer (include/swiglu/mpi.hpp): expert parallelism. Each rank
// holds a part of the layer (MoeLayer::part: the whole router, its range of
// experts, rank 0 the shared block), routes every token, computes its
// experts' terms (MoeLayer::terms), and TermExchange adds every token's
// terms on one rank in the one-process order.
#include <swiglu/moe_checkpoint.hpp>
#include <swiglu/mpi.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "partial_sum.hpp"
#include "term_exchange.hpp"

namespace swiglu {

ShardRange expert_range(std::int64_t experts, int rank, int ranks) {
    // A rank without experts would still route every token for nothing; a
    // layer of fewer experts than ranks gains nothing from the extra ranks.
    if (ranks < 1 || rank < 0 || rank >= ranks || experts < ranks)
        throw Error(Status::invalid_argument,
                    "expert_range: need experts >= ranks >= 1 and rank in [0, ranks) (got " +
                        std::to_string(experts) + " experts, rank " + std::to_string(rank) +
                        " of " + std::to_string(ranks) + ")");
    return {experts * rank / ranks, experts * (rank + 1) / ranks};
}

struct ShardedMoeLayer::Impl {
    detail::PartialSum ranks;  // the communicator, the agreements
    detail::TermExchange exchange;
    std::int64_t d = 0, experts = 0;
    ShardRange held;
    std::unique_ptr<MoeLayer> local;
    // One call's routing and terms, grown to the largest call and kept.
    mutable std::vector<std::int32_t> ids;
    mutable std::vector<float> weights, terms, shared_terms;

    // The first call of a token count reserves the most terms this rank can
    // hold (each token's k experts are distinct: min(k, held) of them here),
    // so that a later call of that count routing more slots here allocates
    // nothing.
    void reserve(std::int64_t tokens, std::int64_t k) const {
        terms.reserve(static_cast<std::size_t>(tokens * std::min(k, held.size()) * d));
    }

    // After construct(): every rank built the same layer, then the exchange.
    void agree(const std::string& identity, bool shared) {
        const std::int64_t shape[2] = {d, experts};
        const char* const names[2] = {"d", "E"};
        ranks.agree_same("ShardedMoeLayer", shape, names, identity);
        exchange.open(ranks.comm(), d, experts, local->rule().top_k, shared);
    }
};

namespace {

std::string rule_text(const RouterRule& r) {
    char scaling[40];  // exactly: %a, not to_string's 6 decimals
    std::snprintf(scaling, sizeof scaling, "%a", static_cast<double>(r.scaling));
    return "k " + std::to_string(r.top_k) + " score " + std::to_string(int(r.score)) + " norm " +
           std::to_string(int(r.normalize)) + " groups " + std::to_string(r.groups) + "/" +
           std::to_string(r.top_groups) + "/" + std::to_string(int(r.group_score)) + " scaling " +
           scaling;
}

const char* layout_text(Layout l) { return l == Layout::out_in ? "out_in" : "in_out"; }

// The router's layout and a fingerprint of its values and the bias's: ranks
// whose copies differ would route differently (each forward call checks
// that too, but this names the cause once, at construction).
std::string router_text(const MoeArrays& a) {
    std::uint64_t h = detail::fingerprint_words(detail::kFingerprintStart, a.router.data,
                                                a.router.rows * a.router.cols);
    if (a.bias) h = detail::fingerprint_words(h, a.bias, a.experts);
    char text[64];
    std::snprintf(text, sizeof text, "router %s %016llx", layout_text(a.router.layout),
                  static_cast<unsigned long long>(h));
    return text;
}

}  // namespace

ShardedMoeLayer::ShardedMoeLayer(MPI_Comm comm, const std::string& path, std::int64_t layer,
                                 const Options& options)
    : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    std::string identity;
    bool has_shared = false;
    s.ranks.construct(comm, "ShardedMoeLayer", [&] {
        // The layer's header first (no values read): E, and what to compare.
        const MoeInfo info = describe_moe_layer(path, layer);
        identity = info.model + " layer " + std::to_string(layer) + " E " +
                   std::to_string(info.experts) + " k " + std::to_string(info.rule.top_k) + " " +
                   info.experts_pattern + " " + info.experts_dtype +
                   (info.has_shared ? " shared" : "") + ", dtype " + detail::dtypes_text(options);
        s.d = info.expert.d;
        has_shared = info.has_shared;
        s.experts = info.experts;
        s.held = expert_range(info.experts, s.ranks.rank(), s.ranks.ranks());
        s.local = std::make_unique<MoeLayer>(load_moe_layer_part(
            path, layer, s.held.begin, s.held.end, s.ranks.rank() == 0, options));
    });
    s.agree(identity, has_shared);
}

ShardedMoeLayer::ShardedMoeLayer(MPI_Comm comm, const MoeArrays& a, const Options& options)
    : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    s.ranks.construct(comm, "ShardedMoeLayer", [&] {
        if (!a.gate || !a.up || !a.down)
            throw Error(Status::invalid_argument,
                        "ShardedMoeLayer: the stacked gate, up or down array is null");
        if (a.d < 1 || a.f < 1 || a.experts < 1 ||
            a.f > std::numeric_limits<std::int64_t>::max() / a.d / a.experts)
            throw Error(Status::invalid_argument,
                        "ShardedMoeLayer: need experts, d, f >= 1 whose product fits (got " +
                            std::to_string(a.experts) + ", " + std::to_string(a.d) + ", " +
                            std::to_string(a.f) + ")");
        s.d = a.d;
        s.experts = a.experts;
        s.held = expert_range(a.experts, s.ranks.rank(), s.ranks.ranks());
        // Each expert's matrix is f * d floats in either layout: this
        // rank's experts start held.begin of them in.
        const std::int64_t skip = s.held.begin * a.f * a.d;
        Experts mine = Experts::stacked(a.gate + skip, a.up + skip, a.down + skip, s.held.size(),
                                        a.d, a.f, a.layout, options);
        const bool first = s.ranks.rank() == 0;
        std::unique_ptr<Ffn> shared;
        if (first && a.shared)
            shared = std::make_unique<Ffn>(a.shared->gate, a.shared->up, a.shared->down, options);
        s.local = std::make_unique<MoeLayer>(MoeLayer::part(a.router, a.rule, std::move(mine),
                                                            s.held.begin, a.bias, std::move(shared),
                                                            first ? a.shared_gate : nullptr));
    });
    const std::string identity =
        "arrays E " + std::to_string(a.experts) + " d " + std::to_string(a.d) + " f " +
        std::to_string(a.f) + " experts " + layout_text(a.layout) + " " + router_text(a) + " " +
        rule_text(a.rule) + (a.bias ? " bias" : "") +
        (a.shared ? " shared f " + std::to_string(a.shared->gate.out_features()) : "") +
        (a.shared_gate ? " gate" : "") + ", dtype " + detail::dtypes_text(options);
    s.agree(identity, a.shared != nullptr);
}

ShardedMoeLayer::ShardedMoeLayer(const MoeArrays& arrays, const Options& options)
    : ShardedMoeLayer(MPI_COMM_WORLD, arrays, options) {}

ShardedMoeLayer::ShardedMoeLayer(const std::string& path, std::int64_t layer,
                                 const Options& options)
    : ShardedMoeLayer(MPI_COMM_WORLD, path, layer, options) {}

ShardedMoeLayer::~ShardedMoeLayer() = default;
ShardedMoeLayer::ShardedMoeLayer(ShardedMoeLayer&&) noexcept = default;
ShardedMoeLayer& ShardedMoeLayer::operator=(ShardedMoeLayer&&) noexcept = default;

const ShardedMoeLayer::Impl& ShardedMoeLayer::impl() const {
    if (!impl_)
        throw Error(Status::invalid_argument, "ShardedMoeLayer: used after being moved from");
    return *impl_;
}

std::int64_t ShardedMoeLayer::d() const { return impl().d; }
std::int64_t ShardedMoeLayer::experts() const { return impl().experts; }
int ShardedMoeLayer::rank() const { return impl().ranks.rank(); }
int ShardedMoeLayer::ranks() const { return impl().ranks.ranks(); }
ShardRange ShardedMoeLayer::held() const { return impl().held; }
const MoeLayer& ShardedMoeLayer::local() const { return *impl().local; }
double ShardedMoeLayer::last_collective_seconds() const { return impl().exchange.seconds(); }

void ShardedMoeLayer::forward(const float* x, float* y, std::int64_t tokens) const {
    const Impl& s = impl();
    const std::int64_t k = s.local->rule().top_k;
    s.exchange.clear_seconds();
    s.ranks.agreed("ShardedMoeLayer::forward", s.d, x, y, tokens, [&] {
        s.reserve(tokens, k);
        s.ids.resize(static_cast<std::size_t>(tokens * k));
        s.weights.resize(s.ids.size());
        s.local->route(x, tokens, s.ids.data(), s.weights.data());
        s.terms.resize(static_cast<std::size_t>(s.local->held_slots(s.ids.data(), tokens) * s.d));
        if (s.local->shared()) s.shared_terms.resize(static_cast<std::size_t>(tokens * s.d));
        s.local->terms(x, tokens, s.ids.data(), s.weights.data(), s.terms.data(),
                       s.shared_terms.data());
        // Ranks that routed differently would disagree on the exchange's
        // counts (MPI_ERR_TRUNCATE, or worse): the routing's fingerprint goes
        // into the call's agreement, and a mismatch fails every rank.
        const std::uint64_t h =
            detail::fingerprint_words(detail::kFingerprintStart, s.ids.data(), tokens * k);
        return detail::fingerprint_words(h, s.weights.data(), tokens * k);
    });
    if (tokens > 0)
        s.exchange.combine(s.ids.data(), tokens, s.terms.data(), s.shared_terms.data(), y);
}

}  // namespace swiglu
