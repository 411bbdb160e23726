// PartialSum (partial_sum.hpp): the communicator, the agreements, and the
// deterministic sum of the partial outputs (a reduce-scatter summed in rank
// order, then an allgather).
#include "partial_sum.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <limits>

namespace swiglu::detail {

namespace {

// FNV-1a: the same value for the same text on every rank and machine.
constexpr std::uint64_t kFnvPrime = 1099511628211ull;

std::uint64_t fingerprint(const std::string& text) {
    std::uint64_t h = kFingerprintStart;
    for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * kFnvPrime;
    return h;
}

}  // namespace

std::uint64_t fingerprint_words(std::uint64_t h, const void* words, std::int64_t count) {
    const auto* bytes = static_cast<const unsigned char*>(words);
    for (std::int64_t i = 0; i < count; ++i) {
        std::uint32_t w;
        std::memcpy(&w, bytes + 4 * i, 4);
        h = (h ^ w) * kFnvPrime;
    }
    return h;
}

std::string dtypes_text(const Options& o) {
    std::string s = dtype_name(o.dtype);
    if (o.down_dtype && *o.down_dtype != o.dtype) s += std::string("/") + dtype_name(*o.down_dtype);
    return s;
}

PartialSum::~PartialSum() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

void PartialSum::open(MPI_Comm caller) {
    check_mpi(MPI_Comm_dup(caller, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &ranks_);
    for (auto* v : {&piece_counts_, &piece_offsets_, &receive_counts_, &receive_offsets_})
        v->resize(static_cast<std::size_t>(ranks_));
}

void PartialSum::agree_same(const char* who, const std::int64_t shape[2],
                            const char* const names[2], const std::string& identity) const {
    // The max of each value and of its negation (complement) give its range.
    std::int64_t range[4] = {shape[0], shape[1], -shape[0], -shape[1]};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, range, 4, MPI_INT64_T, MPI_MAX, comm_), "MPI_Allreduce");
    const std::uint64_t h = fingerprint(identity);
    std::uint64_t kind[2] = {h, ~h};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, kind, 2, MPI_UINT64_T, MPI_MAX, comm_), "MPI_Allreduce");
    if (range[0] != -range[2] || range[1] != -range[3] || kind[0] != ~kind[1])
        throw Error(Status::invalid_argument,
                    std::string(who) + ": the ranks loaded different blocks (" + names[0] +
                        " from " + std::to_string(-range[2]) + " to " + std::to_string(range[0]) +
                        ", " + names[1] + " from " + std::to_string(-range[3]) + " to " +
                        std::to_string(range[1]) + "; this rank's: " + identity +
                        "): every rank must load the same block, with the same dtype");
}

std::unique_ptr<Error> PartialSum::check_call(const char* who, std::int64_t d, const float* x,
                                              const float* y, std::int64_t tokens) const {
    // The text is built on the error path only: a good call allocates nothing.
    const auto fail = [who](const char* what) {
        return std::make_unique<Error>(Status::invalid_argument, std::string(who) + what);
    };
    if (tokens < 0) return fail(": tokens must be >= 0");
    if (tokens > 0 && (!x || !y)) return fail(": x or y is null");
    if (tokens > std::numeric_limits<std::int64_t>::max() / d / 4)
        return fail(": tokens * d overflows");
    return nullptr;
}

// One allreduce agrees on failures, token counts and routing before any rank
// writes y.
void PartialSum::agree_call(const char* who, const Error* failure, std::int64_t tokens,
                            std::uint64_t routing) const {
    // {lowest failing rank, as ranks - rank (0: none), max tokens, -min
    // tokens, max routing, -min routing}: 63 bits of the fingerprint, so that
    // its negation fits.
    const std::int64_t r = static_cast<std::int64_t>(routing >> 1);
    std::int64_t agreed[5] = {failure ? ranks_ - rank_ : 0, tokens, -tokens, r, -r};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, agreed, 5, MPI_INT64_T, MPI_MAX, comm_), "MPI_Allreduce");
    if (agreed[0] > 0) {
        const int from = ranks_ - static_cast<int>(agreed[0]);
        throw_from(comm_, from, from == rank_ ? failure : nullptr);
    }
    if (agreed[1] != -agreed[2])
        throw Error(Status::invalid_argument,
                    std::string(who) + ": every rank must pass the same token count (they passed " +
                        std::to_string(-agreed[2]) + " to " + std::to_string(agreed[1]) + ")");
    if (agreed[3] != -agreed[4])
        throw Error(Status::invalid_argument,
                    std::string(who) +
                        ": ranks routed differently (the ranks' expert ids or weights differ): x, "
                        "the router and its bias must be identical on every rank, on CPUs whose "
                        "router rounding agrees");
}

// Per round of the partial y's values, cut into P pieces: each rank sends
// piece t to rank t (Alltoallv), rank t sums what it got in rank order, and
// the sums are gathered into y on every rank (Allgatherv).
void PartialSum::sum(float* y, std::int64_t total) const {
    collective_seconds_ = 0;
    const auto start = std::chrono::steady_clock::now();
    // MPI counts are ints: values per round that fit one.
    constexpr std::int64_t kRound = INT_MAX / 2;
    for (std::int64_t e0 = 0; e0 < total; e0 += kRound) {
        const std::int64_t count = std::min(kRound, total - e0);
        for (int t = 0; t < ranks_; ++t) {
            const std::int64_t begin = count * t / ranks_, end = count * (t + 1) / ranks_;
            piece_counts_[static_cast<std::size_t>(t)] = static_cast<int>(end - begin);
            piece_offsets_[static_cast<std::size_t>(t)] = static_cast<int>(begin);
        }
        const int mine = piece_counts_[static_cast<std::size_t>(rank_)];
        receive_.resize(static_cast<std::size_t>(mine) * static_cast<std::size_t>(ranks_));
        for (int t = 0; t < ranks_; ++t) {  // from each rank: its copy of my piece
            receive_counts_[static_cast<std::size_t>(t)] = mine;
            receive_offsets_[static_cast<std::size_t>(t)] = mine * t;
        }
        check_mpi(MPI_Alltoallv(partial_.data() + e0, piece_counts_.data(), piece_offsets_.data(),
                                MPI_FLOAT, receive_.data(), receive_counts_.data(),
                                receive_offsets_.data(), MPI_FLOAT, comm_),
                  "MPI_Alltoallv");
        // The sum in rank order, into the first copy: the same bits on every
        // rank, whatever MPI does.
        float* s = receive_.data();
        for (int t = 1; t < ranks_; ++t) {
            const float* copy = receive_.data() + std::int64_t{mine} * t;
            for (int i = 0; i < mine; ++i) s[i] += copy[i];
        }
        check_mpi(MPI_Allgatherv(s, mine, MPI_FLOAT, y + e0, piece_counts_.data(),
                                 piece_offsets_.data(), MPI_FLOAT, comm_),
                  "MPI_Allgatherv");
    }
    collective_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace swiglu::detail
