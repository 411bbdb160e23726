// What an Experts holds: one Ffn per expert (the same engines as a dense
// block, on the process's shared pool for that thread count) and leases on
// the scratch a forward call sorts its tokens into. The public API around
// it: experts.cpp; the forward itself: experts_forward.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <swiglu/moe.hpp>

#include "common/aligned_buffer.hpp"
#include "core/leased_slots.hpp"
#include "core/shared_pool.hpp"

namespace swiglu::detail {

// Refuses (Status::invalid_argument, "<who>: ...") a routing whose ids are
// not all in [0, experts) or whose weights are not all finite: what
// Experts::forward and MoeLayer::terms take. Builds a message only on error.
void check_routing(const char* who, const std::int32_t* ids, const float* weights,
                   std::int64_t tokens, std::int64_t k, std::int64_t experts);

class ExpertsImpl {
public:
    // `experts` already built and checked to share one (d, f).
    explicit ExpertsImpl(std::vector<Ffn> experts);

    // Arguments already checked (experts.cpp): tokens >= 1, k >= 1, every id
    // in [0, E), every weight finite, y is x or apart from x, ids, weights.
    // For a part of a layer (MoeLayer::part) only, an id < 0 is a term held
    // elsewhere: left out (a token with none gets 0). With every id in [0,
    // E), the same bits as before.
    void forward(const float* x, float* y, std::int64_t tokens, const std::int32_t* ids,
                 const float* weights, std::int64_t k) const;

    // The same checks and the same slots, but each slot with an expert
    // (ids[i] >= 0) written on its own: weights[i] * expert(x[i / k]), the
    // product run() adds, rounded alike, d floats per slot in (t, j) order
    // into `terms` (as many rows as such slots). Summed in j order (the
    // first term as it is, then each next one added), they are run()'s y
    // bit for bit: expert parallelism (MoeLayer::terms) combines them on
    // another rank.
    void held_terms(const float* x, float* terms, std::int64_t tokens, const std::int32_t* ids,
                    const float* weights, std::int64_t k) const;

    std::vector<Ffn> experts;
    std::int64_t d, f;
    int threads;
    // The process's pool for `threads` (the experts' own): a call that
    // claims it runs whole experts side by side, one per worker (null: one
    // thread).
    std::shared_ptr<SharedPool> pool;

private:
    // One call's scratch: the (t, j) slots sorted by expert, and their x
    // rows gathered in that order (each expert then runs in place on them).
    // Grown when a call needs more and kept, so that after the first call of
    // a given size forward allocates nothing; never shrunk: it holds the
    // largest call's tokens * k rows of d floats.
    struct Scratch {
        AlignedBuffer<float> rows;           // tokens * k rows of d
        AlignedBuffer<std::int64_t> row_of;  // (t, j) slot -> its row in `rows` (-1: none)
        AlignedBuffer<std::int64_t> start;   // E + 1: expert e's rows are [start[e], start[e+1])
        AlignedBuffer<std::int64_t> next;    // E: the sort's cursors
        AlignedBuffer<std::int64_t> order;   // the chosen experts, most rows first
    };
    // Concurrent calls each lease a slot (core/leased_slots.hpp): they never
    // share scratch and never wait on each other.
    void run(Scratch& scratch, const float* x, float* y, std::int64_t tokens,
             const std::int32_t* ids, const float* weights, std::int64_t k) const;
    // The counting sort of the slots by expert (s.row_of, s.start), their x
    // rows gathered, and each chosen expert run over them (s.rows).
    void run_chosen(Scratch& s, const float* x, std::int64_t tokens, const std::int32_t* ids,
                    std::int64_t k) const;
    // Runs each chosen expert over its `rows` rows (in place in `rows`).
    void run_experts(Scratch& s, float* rows, std::int64_t count) const;

    LeasedSlots<Scratch, 8> slots_;
};

}  // namespace swiglu::detail
