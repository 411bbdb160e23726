// ShardedMoeLayer (include/swiglu/mpi.hpp): expert parallelism. Each rank
// holds a part of the layer (MoeLayer::part: the whole router, its range of
// experts, rank 0 the shared block), computes its terms for every token,
// and PartialSum adds the parts in rank order.
#include <swiglu/moe_checkpoint.hpp>
#include <swiglu/mpi.hpp>

#include <memory>
#include <string>

#include "partial_sum.hpp"

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
    detail::PartialSum ranks;  // the communicator, the agreements, the sum
    std::int64_t d = 0, experts = 0;
    ShardRange held;
    std::unique_ptr<MoeLayer> local;
};

ShardedMoeLayer::ShardedMoeLayer(MPI_Comm comm, const std::string& path, std::int64_t layer,
                                 const Options& options)
    : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    std::string identity;
    s.ranks.construct(comm, "ShardedMoeLayer", [&] {
        // The layer's header first (no values read): E, and what to compare.
        const MoeInfo info = describe_moe_layer(path, layer);
        identity = info.model + " layer " + std::to_string(layer) + " E " +
                   std::to_string(info.experts) + " k " + std::to_string(info.rule.top_k) + " " +
                   info.experts_pattern + " " + info.experts_dtype +
                   (info.has_shared ? " shared" : "") + ", dtype " + detail::dtypes_text(options);
        s.d = info.expert.d;
        s.experts = info.experts;
        s.held = expert_range(info.experts, s.ranks.rank(), s.ranks.ranks());
        s.local = std::make_unique<MoeLayer>(load_moe_layer_part(
            path, layer, s.held.begin, s.held.end, s.ranks.rank() == 0, options));
    });
    const std::int64_t shape[2] = {s.d, s.experts};
    const char* const names[2] = {"d", "E"};
    s.ranks.agree_same("ShardedMoeLayer", shape, names, identity);
}

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
double ShardedMoeLayer::last_collective_seconds() const {
    return impl().ranks.collective_seconds();
}

void ShardedMoeLayer::forward(const float* x, float* y, std::int64_t tokens) const {
    const Impl& s = impl();
    s.ranks.forward(
        "ShardedMoeLayer::forward", s.d, x, y, tokens,
        [&](const float* in, std::int64_t n, float* partial) { s.local->forward(in, partial, n); });
}

}  // namespace swiglu
