// ShardedFfn (include/swiglu/mpi.hpp): the shard's block, agreement on
// errors across ranks, and the deterministic sum of the partial outputs.
#include <swiglu/mpi.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "agreement.hpp"
#include "partial_sum.hpp"

namespace swiglu {

using detail::check_mpi;

namespace {

// f r / P, rounded to 64 columns (the packing's tile width) where every
// rank gets at least 64, else to 32 (GGUF's blocks: a shard of a Q8_0 / Q4_0
// file then reads whole blocks, packs them as stored and quantises its
// activations on the single process's blocks) where every rank gets 32.
// Blocks larger than a tile (the K-quants' 256) are never cut, even where
// that leaves a rank none: a cut super-block could not pack as stored, and
// down's activations would be quantised on other blocks than in one process.
std::int64_t boundary(std::int64_t f, int rank, int ranks, std::int64_t block) {
    if (rank <= 0) return 0;
    if (rank >= ranks) return f;
    const std::int64_t exact = f * rank / ranks, p = ranks;
    const std::int64_t unit = block > 64 ? block : f >= 64 * p ? 64 : f >= 32 * p ? 32 : 1;
    return std::min(f, (exact + unit / 2) / unit * unit);
}

// The weights' largest block (block_values), for views of f32 weights run
// in options' dtypes.
std::int64_t view_block(const Options& options) {
    BlockInfo f32;
    f32.gate_format = f32.up_format = f32.down_format = "F32";
    return block_values(f32, options);
}

// Rows [begin, end) of a (rows, cols) matrix, or its columns, as a
// contiguous copy when they are not contiguous already.
WeightView slice(const WeightView& w, bool slice_out, std::int64_t begin, std::int64_t end,
                 std::vector<float>& copy) {
    // The sliced dimension in storage: out is rows for out_in, columns for in_out.
    const bool rows = (w.layout == Layout::out_in) == slice_out;
    const std::int64_t n = end - begin;
    if (rows) {
        WeightView v = w;
        v.data = w.data + begin * w.cols;
        v.rows = n;
        return v;
    }
    copy.resize(static_cast<std::size_t>(w.rows * n));
    for (std::int64_t r = 0; r < w.rows; ++r)
        std::memcpy(copy.data() + r * n, w.data + r * w.cols + begin,
                    static_cast<std::size_t>(n) * sizeof(float));
    WeightView v = w;
    v.data = copy.data();
    v.cols = n;
    return v;
}

}  // namespace

ShardRange shard_range(std::int64_t f, int rank, int ranks) {
    return shard_range(f, rank, ranks, 32);
}

ShardRange shard_range(std::int64_t f, int rank, int ranks, std::int64_t block) {
    if (f < 1 || ranks < 1 || rank < 0 || rank >= ranks || block < 1)
        throw Error(Status::invalid_argument,
                    "shard_range: f and block must be >= 1 and rank in [0, ranks) (got f = " +
                        std::to_string(f) + ", rank " + std::to_string(rank) + " of " +
                        std::to_string(ranks) + ", block " + std::to_string(block) + ")");
    return {boundary(f, rank, ranks, block), boundary(f, rank + 1, ranks, block)};
}

struct ShardedFfn::Impl {
    detail::PartialSum ranks;  // the communicator, the agreements, the sum
    std::int64_t d = 0, f = 0;
    ShardRange shard;
    std::string identity;        // what block this is, to compare across ranks
    std::unique_ptr<Ffn> local;  // null when this rank holds no columns

    // Collective: runs `build` (which sets d, f, identity, shard and local)
    // on every rank, then agrees: a failure on any rank throws on every
    // rank, and so do ranks that built different blocks (another d or f,
    // or another scheme, tensor names, stored or packed dtype: another
    // file, say).
    template <class Build>
    void construct(MPI_Comm caller, Build&& build) {
        ranks.construct(caller, "ShardedFfn", [&] { build(*this); });
        const std::int64_t shape[2] = {d, f};
        const char* const names[2] = {"d", "f"};
        ranks.agree_same("ShardedFfn", shape, names, identity);
    }
    int rank() const { return ranks.rank(); }
    int size() const { return ranks.ranks(); }
};

ShardedFfn::ShardedFfn(MPI_Comm comm, const WeightView& gate, const WeightView& up,
                       const WeightView& down, const Options& options)
    : impl_(std::make_unique<Impl>()) {
    impl_->construct(comm, [&](Impl& s) {
        s.identity = "views, dtype " + detail::dtypes_text(options);
        s.d = gate.in_features();
        s.f = gate.out_features();
        if (s.d < 1 || s.f < 1)
            throw Error(Status::invalid_argument, "ShardedFfn: gate must map d >= 1 to f >= 1");
        // The full block's checks (shapes, nulls, overflow) apply on every
        // rank, also one that holds no columns.
        if (up.in_features() != s.d || up.out_features() != s.f || down.in_features() != s.f ||
            down.out_features() != s.d)
            throw Error(Status::invalid_argument,
                        "ShardedFfn: up must map d -> f and down f -> d like gate (d = " +
                            std::to_string(s.d) + ", f = " + std::to_string(s.f) + ")");
        if (!gate.data || !up.data || !down.data)
            throw Error(Status::invalid_argument, "ShardedFfn: a weight's data is null");
        s.shard = shard_range(s.f, s.rank(), s.size(), view_block(options));
        if (s.shard.size() > 0) {
            std::vector<float> g, u, dn;  // slices that are not contiguous in place
            s.local =
                std::make_unique<Ffn>(slice(gate, true, s.shard.begin, s.shard.end, g),
                                      slice(up, true, s.shard.begin, s.shard.end, u),
                                      slice(down, false, s.shard.begin, s.shard.end, dn), options);
        }
    });
}

ShardedFfn::ShardedFfn(MPI_Comm comm, const std::string& path, const WeightSelector& selector,
                       const Options& options)
    : impl_(std::make_unique<Impl>()) {
    impl_->construct(comm, [&](Impl& s) {
        // The block's header first (no values read), for f; then only this
        // rank's columns, straight from the mapped file.
        const BlockInfo block = describe_block(path, selector);
        // The dtypes it runs in (--dtype stored: the file's own), resolved
        // once here so that every rank compares and cuts on the same.
        const Options run = stored_options(block, options);
        s.identity = block.scheme + " " + block.gate_name + " " + block.up_name + " " +
                     block.down_name + " " + block.source_dtype + ", dtype " +
                     detail::dtypes_text(run);
        s.d = block.d;
        s.f = block.f;
        s.shard = shard_range(s.f, s.rank(), s.size(), block_values(block, options));
        if (s.shard.size() > 0)
            s.local = std::make_unique<Ffn>(
                load_ffn_slice(path, {s.shard.begin, s.shard.end}, selector, run));
    });
}

ShardedFfn::ShardedFfn(const WeightView& gate, const WeightView& up, const WeightView& down,
                       const Options& options)
    : ShardedFfn(MPI_COMM_WORLD, gate, up, down, options) {}

ShardedFfn::ShardedFfn(const std::string& path, const WeightSelector& selector,
                       const Options& options)
    : ShardedFfn(MPI_COMM_WORLD, path, selector, options) {}

ShardedFfn::~ShardedFfn() = default;
ShardedFfn::ShardedFfn(ShardedFfn&&) noexcept = default;
ShardedFfn& ShardedFfn::operator=(ShardedFfn&&) noexcept = default;

std::int64_t ShardedFfn::d() const { return impl_->d; }
std::int64_t ShardedFfn::f() const { return impl_->f; }
int ShardedFfn::rank() const { return impl_->rank(); }
int ShardedFfn::ranks() const { return impl_->size(); }
ShardRange ShardedFfn::shard() const { return impl_->shard; }
double ShardedFfn::last_collective_seconds() const { return impl_->ranks.collective_seconds(); }

void ShardedFfn::forward(const float* x, float* y, std::int64_t tokens) const {
    if (!impl_) throw Error(Status::invalid_argument, "ShardedFfn: used after being moved from");
    const Impl& s = *impl_;
    // This rank's shard: its partial y (zeros when it holds no columns).
    s.ranks.forward("ShardedFfn::forward", s.d, x, y, tokens,
                    [&](const float* in, std::int64_t n, float* partial) {
                        if (s.local)
                            s.local->forward(in, partial, n);
                        else
                            std::fill(partial, partial + n * s.d, 0.0f);
                    });
}

}  // namespace swiglu
