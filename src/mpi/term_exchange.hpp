// The exact combine of expert parallelism (ShardedMoeLayer): each rank has
// computed the weighted terms of the experts it holds (MoeLayer::terms);
// the terms go to the rank that owns their token's slice, which adds them
// in the one-process order (j order, then the shared term), and the slices
// are gathered. y is then one process's MoeLayer::forward, bit for bit, for
// any P: every sum is the one a single process does, in its order.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace swiglu::detail {

class TermExchange {
public:
    TermExchange() = default;
    ~TermExchange();
    TermExchange(const TermExchange&) = delete;
    TermExchange& operator=(const TermExchange&) = delete;

    // For a communicator of P ranks, rank r holding routed experts
    // expert_range(experts, r, P), each token choosing k of them, terms of d
    // floats; shared: rank 0 holds a shared block (its term comes last).
    void open(MPI_Comm comm, std::int64_t d, std::int64_t experts, std::int64_t k, bool shared);

    // Collective, after every rank's MoeLayer::terms for the same ids
    // (tokens x k, every rank's the same): `terms` this rank's (t, j)-ordered
    // rows, `shared_terms` rank 0's (tokens, d) shared terms (others: unused).
    // y (tokens, d): the layer's output on every rank. y may be x.
    void combine(const std::int32_t* ids, std::int64_t tokens, const float* terms,
                 const float* shared_terms, float* y) const;

    // Seconds the last combine() took (exchange, sums and allgather); 0
    // after clear_seconds(), which a forward call does first (a call of no
    // tokens, or one that fails, combines nothing).
    double seconds() const { return seconds_; }
    void clear_seconds() const { seconds_ = 0; }

private:
    // One round: tokens [a, b); `sent` of this rank's terms precede them.
    void round(const std::int32_t* ids, std::int64_t a, std::int64_t b, const float* terms,
               std::int64_t sent, const float* shared_terms, float* y) const;

    MPI_Comm comm_ = MPI_COMM_NULL;         // not owned
    MPI_Datatype row_ = MPI_DATATYPE_NULL;  // d floats: MPI counts are rows, not floats
    int rank_ = 0, ranks_ = 1;
    std::int64_t d_ = 0, k_ = 1;
    bool shared_ = false;
    std::vector<int> owner_;  // expert -> the rank holding it
    // Per round, grown to the largest and kept: per rank, the terms I send
    // it and where they start, the terms I get from it and where they land,
    // each rank's token slice; the received terms and shared terms; the
    // cursor into each rank's received rows while combining.
    mutable std::vector<int> send_counts_, send_offsets_, receive_counts_, receive_offsets_,
        slice_counts_, slice_offsets_;
    mutable std::vector<std::int64_t> cursor_;
    mutable std::vector<float> received_, received_shared_;
    mutable double seconds_ = 0;
};

}  // namespace swiglu::detail
