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

// "q4_k" or "q4_k/q6_k" (gate|up / down): what a rank runs, to compare.
std::string dtypes_text(const Options& o) {
    std::string s = dtype_name(o.dtype);
    if (o.down_dtype && *o.down_dtype != o.dtype) s += std::string("/") + dtype_name(*o.down_dtype);
    return s;
}

// FNV-1a: the same value for the same text on every rank and machine.
std::uint64_t fingerprint(const std::string& text) {
    std::uint64_t h = 14695981039346656037ull;
    for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
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
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0, ranks = 1;
    std::int64_t d = 0, f = 0;
    ShardRange shard;
    std::string identity;        // what block this is, to compare across ranks
    std::unique_ptr<Ffn> local;  // null when this rank holds no columns
    // Scratch, grown to the largest call so far: the partial y, and the
    // pieces of it received from every rank.
    mutable std::vector<float> partial, receive;
    // MPI's counts and offsets per rank: each rank's piece (what I send it,
    // and what it gathers to all), and where each rank's copy of mine lands.
    mutable std::vector<int> piece_counts, piece_offsets, receive_counts, receive_offsets;
    mutable double collective_seconds = 0;

    ~Impl() {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
    }

    // Collective: the constructors' common part (see its definition).
    template <class Build>
    void construct(MPI_Comm caller, Build&& build);

    void partial_sums(const float* x, std::int64_t tokens) const;
    void sum(float* y, std::int64_t tokens) const;
};

// Runs `build` (which sets the Impl's d, f, identity, shard and block) on
// every rank, then agrees: a failure on any rank throws on every rank, and
// so do ranks that built different blocks (another d or f, or another
// scheme, tensor names, stored or packed dtype: another file, say).
template <class Build>
void ShardedFfn::Impl::construct(MPI_Comm caller, Build&& build) {
    check_mpi(MPI_Comm_dup(caller, &comm), "MPI_Comm_dup");
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    for (auto* v : {&piece_counts, &piece_offsets, &receive_counts, &receive_offsets})
        v->resize(static_cast<std::size_t>(ranks));
    detail::agree(comm, detail::failure_of("ShardedFfn", [&] { build(*this); }).get());
    // The max of each value and of its negation (complement) give its range.
    std::int64_t shape[4] = {d, f, -d, -f};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, shape, 4, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
    const std::uint64_t h = fingerprint(identity);
    std::uint64_t kind[2] = {h, ~h};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, kind, 2, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce");
    if (shape[0] != -shape[2] || shape[1] != -shape[3] || kind[0] != ~kind[1])
        throw Error(Status::invalid_argument,
                    "ShardedFfn: the ranks loaded different blocks (d from " +
                        std::to_string(-shape[2]) + " to " + std::to_string(shape[0]) +
                        ", f from " + std::to_string(-shape[3]) + " to " +
                        std::to_string(shape[1]) + "; this rank's: " + identity +
                        "): every rank must load the same block, with the same dtype");
}

ShardedFfn::ShardedFfn(MPI_Comm comm, const WeightView& gate, const WeightView& up,
                       const WeightView& down, const Options& options)
    : impl_(std::make_unique<Impl>()) {
    impl_->construct(comm, [&](Impl& s) {
        s.identity = "views, dtype " + dtypes_text(options);
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
        s.shard = shard_range(s.f, s.rank, s.ranks, view_block(options));
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
                     block.down_name + " " + block.source_dtype + ", dtype " + dtypes_text(run);
        s.d = block.d;
        s.f = block.f;
        s.shard = shard_range(s.f, s.rank, s.ranks, block_values(block, options));
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
int ShardedFfn::rank() const { return impl_->rank; }
int ShardedFfn::ranks() const { return impl_->ranks; }
ShardRange ShardedFfn::shard() const { return impl_->shard; }
double ShardedFfn::last_collective_seconds() const { return impl_->collective_seconds; }

void ShardedFfn::forward(const float* x, float* y, std::int64_t tokens) const {
    if (!impl_) throw Error(Status::invalid_argument, "ShardedFfn: used after being moved from");
    const Impl& s = *impl_;
    // Each rank checks the call and runs its shard; then one allreduce
    // agrees on failures and token counts before any rank writes y: a bad
    // argument or a failure anywhere, or token counts that differ, throw
    // everywhere.
    std::unique_ptr<Error> failure;
    if (tokens < 0)
        failure = std::make_unique<Error>(Status::invalid_argument,
                                          "ShardedFfn::forward: tokens must be >= 0");
    else if (tokens > 0 && (!x || !y))
        failure = std::make_unique<Error>(Status::invalid_argument,
                                          "ShardedFfn::forward: x or y is null");
    else if (tokens > std::numeric_limits<std::int64_t>::max() / s.d / 4)
        failure = std::make_unique<Error>(Status::invalid_argument,
                                          "ShardedFfn::forward: tokens * d overflows");
    if (!failure && tokens > 0)
        failure = detail::failure_of("ShardedFfn::forward", [&] { s.partial_sums(x, tokens); });
    // {lowest failing rank, as ranks - rank (0: none), max tokens, -min tokens}
    std::int64_t agreed[3] = {failure ? s.ranks - s.rank : 0, tokens, -tokens};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, agreed, 3, MPI_INT64_T, MPI_MAX, s.comm),
              "MPI_Allreduce");
    if (agreed[0] > 0) {
        const int from = s.ranks - static_cast<int>(agreed[0]);
        detail::throw_from(s.comm, from, from == s.rank ? failure.get() : nullptr);
    }
    if (agreed[1] != -agreed[2])
        throw Error(Status::invalid_argument,
                    "ShardedFfn::forward: every rank must pass the same token count (they passed " +
                        std::to_string(-agreed[2]) + " to " + std::to_string(agreed[1]) + ")");
    if (tokens == 0) return;
    s.sum(y, tokens);
}

// This rank's shard: its partial y (zeros when it holds no columns).
void ShardedFfn::Impl::partial_sums(const float* x, std::int64_t tokens) const {
    partial.resize(static_cast<std::size_t>(tokens * d));
    if (local)
        local->forward(x, partial.data(), tokens);
    else
        std::fill(partial.begin(), partial.end(), 0.0f);
}

// Per round of the partial y's tokens x d values, cut into P pieces: each
// rank sends piece t to rank t (Alltoallv), rank t sums what it got in rank
// order, and the sums are gathered into y on every rank (Allgatherv).
void ShardedFfn::Impl::sum(float* y, std::int64_t tokens) const {
    collective_seconds = 0;
    const auto start = std::chrono::steady_clock::now();
    const std::int64_t total = tokens * d;
    // MPI counts are ints: values per round that fit one.
    constexpr std::int64_t kRound = INT_MAX / 2;
    for (std::int64_t e0 = 0; e0 < total; e0 += kRound) {
        const std::int64_t count = std::min(kRound, total - e0);
        for (int t = 0; t < ranks; ++t) {
            const std::int64_t begin = count * t / ranks, end = count * (t + 1) / ranks;
            piece_counts[static_cast<std::size_t>(t)] = static_cast<int>(end - begin);
            piece_offsets[static_cast<std::size_t>(t)] = static_cast<int>(begin);
        }
        const int mine = piece_counts[static_cast<std::size_t>(rank)];
        receive.resize(static_cast<std::size_t>(mine) * static_cast<std::size_t>(ranks));
        for (int t = 0; t < ranks; ++t) {  // from each rank: its copy of my piece
            receive_counts[static_cast<std::size_t>(t)] = mine;
            receive_offsets[static_cast<std::size_t>(t)] = mine * t;
        }
        check_mpi(MPI_Alltoallv(partial.data() + e0, piece_counts.data(), piece_offsets.data(),
                                MPI_FLOAT, receive.data(), receive_counts.data(),
                                receive_offsets.data(), MPI_FLOAT, comm),
                  "MPI_Alltoallv");
        // The sum in rank order, into the first copy: the same bits on every
        // rank, whatever MPI does.
        float* sum = receive.data();
        for (int t = 1; t < ranks; ++t) {
            const float* copy = receive.data() + std::int64_t{mine} * t;
            for (int i = 0; i < mine; ++i) sum[i] += copy[i];
        }
        check_mpi(MPI_Allgatherv(sum, mine, MPI_FLOAT, y + e0, piece_counts.data(),
                                 piece_offsets.data(), MPI_FLOAT, comm),
                  "MPI_Allgatherv");
    }
    collective_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace swiglu
