// What every sharded layer of swiglu_mpi does around its own compute: a
// communicator of its own, the agreement that every rank built the same
// thing, and per forward call the agreement on the call and the
// deterministic sum of the ranks' partial outputs (ShardedFfn: hidden
// columns per rank). ShardedMoeLayer (experts per rank) uses the first two
// and combines its terms itself (term_exchange.hpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "agreement.hpp"

namespace swiglu::detail {

// "q4_k" or "q4_k/q6_k" (gate|up / down): what a rank runs, to compare.
std::string dtypes_text(const Options& o);

// FNV-1a over `count` 32-bit words (ints or floats' bits), continuing from
// h (start with kFingerprintStart): the same value for the same words on
// every rank and machine.
constexpr std::uint64_t kFingerprintStart = 14695981039346656037ull;
std::uint64_t fingerprint_words(std::uint64_t h, const void* words, std::int64_t count);

class PartialSum {
public:
    PartialSum() = default;
    ~PartialSum();
    PartialSum(const PartialSum&) = delete;
    PartialSum& operator=(const PartialSum&) = delete;

    // Collective: duplicates `caller` (the caller's stays free for other
    // traffic), then runs build() on every rank: a failure on any rank
    // throws on every rank, as "rank k: <message>". Then `shape` (two
    // numbers) and `identity` (what was built, as text) must be the same on
    // every rank, else every rank throws invalid_argument naming `who`,
    // `names` of the shape and this rank's identity.
    template <class Build>
    void construct(MPI_Comm caller, const char* who, Build&& build) {
        open(caller);
        agree(comm_, failure_of(who, [&] { build(); }).get());
    }
    void agree_same(const char* who, const std::int64_t shape[2], const char* const names[2],
                    const std::string& identity) const;

    // Collective: every rank calls it with the same tokens (and x); each
    // checks the call (x, y, tokens against d), runs compute() (where tokens
    // > 0), and the ranks agree: a bad call or a failure on any rank, or
    // token counts that differ, throw on every rank, y untouched. A compute()
    // that returns a std::uint64_t returns a fingerprint of its routing
    // (ShardedMoeLayer: the ids and weights), which must then be the same on
    // every rank: agreed in the same allreduce, no collective more.
    template <class Compute>
    void agreed(const char* who, std::int64_t d, const float* x, const float* y,
                std::int64_t tokens, Compute&& compute) const {
        std::unique_ptr<Error> failure = check_call(who, d, x, y, tokens);
        std::uint64_t routing = 0;
        if (!failure && tokens > 0)
            failure = failure_of(who, [&] {
                if constexpr (std::is_void_v<std::invoke_result_t<Compute&>>)
                    compute();
                else
                    routing = compute();
            });
        agree_call(who, failure.get(), tokens, routing);
    }

    // agreed(), compute being partial(x, tokens, out) into this rank's own
    // (tokens, d) partial output; then y = the sum of the partials in rank
    // order, the same bits on every rank. y may be x.
    template <class Partial>
    void forward(const char* who, std::int64_t d, const float* x, float* y, std::int64_t tokens,
                 Partial&& partial) const {
        agreed(who, d, x, y, tokens, [&] {
            partial_.resize(static_cast<std::size_t>(tokens * d));
            partial(x, tokens, partial_.data());
        });
        if (tokens > 0) sum(y, tokens * d);
    }

    MPI_Comm comm() const { return comm_; }
    int rank() const { return rank_; }
    int ranks() const { return ranks_; }
    // Seconds the last forward() spent in the sum's collectives.
    double collective_seconds() const { return collective_seconds_; }

private:
    void open(MPI_Comm caller);
    std::unique_ptr<Error> check_call(const char* who, std::int64_t d, const float* x,
                                      const float* y, std::int64_t tokens) const;
    void agree_call(const char* who, const Error* failure, std::int64_t tokens,
                    std::uint64_t routing) const;
    void sum(float* y, std::int64_t total) const;

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, ranks_ = 1;
    // Scratch, grown to the largest call so far: this rank's partial y, and
    // the pieces of it received from every rank.
    mutable std::vector<float> partial_, receive_;
    // MPI's counts and offsets per rank: each rank's piece (what I send it,
    // and what it gathers to all), and where each rank's copy of mine lands.
    mutable std::vector<int> piece_counts_, piece_offsets_, receive_counts_, receive_offsets_;
    mutable double collective_seconds_ = 0;
};

}  // namespace swiglu::detail
