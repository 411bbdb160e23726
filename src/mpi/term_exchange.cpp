// TermExchange (term_exchange.hpp): the terms to their tokens' owners
// (Alltoallv, Scatterv for the shared ones), the one-process sum there, and
// an Allgatherv of the token slices.
#include "term_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>

#include <swiglu/mpi.hpp>

#include "agreement.hpp"

namespace swiglu::detail {

TermExchange::~TermExchange() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (row_ != MPI_DATATYPE_NULL && !finalized) MPI_Type_free(&row_);
}

void TermExchange::open(MPI_Comm comm, std::int64_t d, std::int64_t experts, std::int64_t k,
                        bool shared) {
    comm_ = comm;
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &ranks_);
    d_ = d;
    k_ = k;
    shared_ = shared;
    if (d < 1 || d > INT_MAX)
        throw Error(Status::invalid_argument, "ShardedMoeLayer: d must be in [1, INT_MAX]");
    check_mpi(MPI_Type_contiguous(static_cast<int>(d), MPI_FLOAT, &row_), "MPI_Type_contiguous");
    check_mpi(MPI_Type_commit(&row_), "MPI_Type_commit");
    owner_.assign(static_cast<std::size_t>(experts), 0);
    for (int r = 0; r < ranks_; ++r) {
        const ShardRange held = expert_range(experts, r, ranks_);
        std::fill(owner_.begin() + held.begin, owner_.begin() + held.end, r);
    }
    for (auto* v : {&send_counts_, &send_offsets_, &receive_counts_, &receive_offsets_,
                    &slice_counts_, &slice_offsets_})
        v->resize(static_cast<std::size_t>(ranks_));
    cursor_.resize(static_cast<std::size_t>(ranks_));
}

void TermExchange::combine(const std::int32_t* ids, std::int64_t tokens, const float* terms,
                           const float* shared_terms, float* y) const {
    const auto start = std::chrono::steady_clock::now();
    // MPI counts are ints: tokens per round whose (k + 1) rows fit one.
    const std::int64_t per_round = std::max<std::int64_t>(1, (INT_MAX / 2) / (k_ + 1));
    std::int64_t sent = 0;  // this rank's terms of the earlier rounds
    for (std::int64_t a = 0; a < tokens; a += per_round) {
        const std::int64_t b = std::min(tokens, a + per_round);
        round(ids, a, b, terms, sent, shared_terms, y);
        for (std::int64_t i = a * k_; i < b * k_; ++i) sent += owner_[std::size_t(ids[i])] == rank_;
    }
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void TermExchange::round(const std::int32_t* ids, std::int64_t a, std::int64_t b,
                         const float* terms, std::int64_t sent, const float* shared_terms,
                         float* y) const {
    const std::int64_t n = b - a;
    const auto at = [](std::vector<int>& v, int r) -> int& { return v[std::size_t(r)]; };
    for (int q = 0; q < ranks_; ++q) {  // rank q's slice: tokens [a + n q / P, a + n (q + 1) / P)
        at(slice_offsets_, q) = static_cast<int>(n * q / ranks_);
        at(slice_counts_, q) = static_cast<int>(n * (q + 1) / ranks_ - n * q / ranks_);
        at(send_counts_, q) = 0;
        at(receive_counts_, q) = 0;
    }
    const std::int64_t mine_begin = a + at(slice_offsets_, rank_);
    const std::int64_t mine_end = mine_begin + at(slice_counts_, rank_);
    // Every rank routed every token: each knows what it sends and receives.
    for (int q = 0; q < ranks_; ++q)
        for (std::int64_t t = a + at(slice_offsets_, q);
             t < a + at(slice_offsets_, q) + at(slice_counts_, q); ++t)
            for (std::int64_t j = 0; j < k_; ++j)
                if (owner_[std::size_t(ids[t * k_ + j])] == rank_) ++at(send_counts_, q);
    for (std::int64_t i = mine_begin * k_; i < mine_end * k_; ++i)
        ++at(receive_counts_, owner_[std::size_t(ids[i])]);
    int send_next = 0, receive_next = 0;
    for (int q = 0; q < ranks_; ++q) {
        at(send_offsets_, q) = send_next;
        send_next += at(send_counts_, q);
        at(receive_offsets_, q) = receive_next;
        receive_next += at(receive_counts_, q);
    }
    // At most k terms per token of my slice: reserved so that a later call
    // of this size routing more of them here allocates nothing.
    received_.reserve(static_cast<std::size_t>((mine_end - mine_begin) * k_ * d_));
    received_.resize(static_cast<std::size_t>(std::int64_t{receive_next} * d_));
    check_mpi(MPI_Alltoallv(terms + sent * d_, send_counts_.data(), send_offsets_.data(), row_,
                            received_.data(), receive_counts_.data(), receive_offsets_.data(), row_,
                            comm_),
              "MPI_Alltoallv");
    const std::int64_t mine = mine_end - mine_begin;
    if (shared_) {
        received_shared_.resize(static_cast<std::size_t>(mine * d_));
        check_mpi(MPI_Scatterv(rank_ == 0 ? shared_terms + a * d_ : nullptr, slice_counts_.data(),
                               slice_offsets_.data(), row_, received_shared_.data(),
                               static_cast<int>(mine), row_, 0, comm_),
                  "MPI_Scatterv");
    }
    // The one-process sum (core/experts_forward.cpp, MoeLayer::terms): the
    // j = 0 term as it is, each next one added in j order, then the shared
    // term; only additions, so no contraction can change a rounding.
    for (int r = 0; r < ranks_; ++r) cursor_[std::size_t(r)] = at(receive_offsets_, r);
    for (std::int64_t t = mine_begin; t < mine_end; ++t) {
        float* yt = y + t * d_;
        for (std::int64_t j = 0; j < k_; ++j) {
            const int r = owner_[std::size_t(ids[t * k_ + j])];
            const float* term = received_.data() + cursor_[std::size_t(r)]++ * d_;
            if (j == 0)
                std::memcpy(yt, term, static_cast<std::size_t>(d_) * sizeof(float));
            else
                for (std::int64_t c = 0; c < d_; ++c) yt[c] = yt[c] + term[c];
        }
        if (shared_) {
            const float* s = received_shared_.data() + (t - mine_begin) * d_;
            for (std::int64_t c = 0; c < d_; ++c) yt[c] = yt[c] + s[c];
        }
    }
    check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, y + a * d_, slice_counts_.data(),
                             slice_offsets_.data(), row_, comm_),
              "MPI_Allgatherv");
}

}  // namespace swiglu::detail
