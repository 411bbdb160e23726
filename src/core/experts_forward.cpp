// Experts' forward once its arguments are checked: the (t, j) slots sorted by
// expert, each expert run once over all its rows, the k terms combined (or,
// for expert parallelism, handed out one by one: held_terms).
// Compiled with -ffp-contract=off (src/CMakeLists.txt): the combine's order
// of roundings below is the contract, whatever the ISA flags.
#include <algorithm>
#include <cstring>
#include <utility>

#include "core/experts_impl.hpp"
#include "core/phase_runner.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

ExpertsImpl::ExpertsImpl(std::vector<Ffn> experts_)
    : experts(std::move(experts_)),
      d(experts.front().d()),
      f(experts.front().f()),
      threads(experts.front().threads()),
      pool(threads > 1 ? shared_pool(threads, &serialize_onednn_on_this_thread) : nullptr) {}

namespace {
template <class T>
void reserve(AlignedBuffer<T>& buffer, std::size_t count) {
    if (buffer.size() < count) buffer = AlignedBuffer<T>(count);
}
}  // namespace

void ExpertsImpl::forward(const float* x, float* y, std::int64_t tokens, const std::int32_t* ids,
                          const float* weights, std::int64_t k) const {
    slots_.lease([&](Scratch& s) { run(s, x, y, tokens, ids, weights, k); });
}

void ExpertsImpl::held_terms(const float* x, float* terms, std::int64_t tokens,
                             const std::int32_t* ids, const float* weights, std::int64_t k) const {
    slots_.lease([&](Scratch& s) {
        run_chosen(s, x, tokens, ids, k);
        // Each held slot's product, rounded to f32 on its own as run()
        // rounds it (this TU is built without contraction), in (t, j) order.
        const float* rows = s.rows.data();
        const std::int64_t* row_of = s.row_of.data();
        float* out = terms;
        for (std::int64_t i = 0; i < tokens * k; ++i) {
            if (row_of[i] < 0) continue;
            const float* r = rows + row_of[i] * d;
            const float wi = weights[i];
            for (std::int64_t c = 0; c < d; ++c) out[c] = wi * r[c];
            out += d;
        }
    });
}

void ExpertsImpl::run_chosen(Scratch& s, const float* x, std::int64_t tokens,
                             const std::int32_t* ids, std::int64_t k) const {
    const auto E = static_cast<std::int64_t>(experts.size());
    const std::int64_t slots = tokens * k;  // checked not to overflow, nor slots * d floats
    reserve(s.rows, static_cast<std::size_t>(slots * d));
    reserve(s.row_of, static_cast<std::size_t>(slots));
    reserve(s.start, static_cast<std::size_t>(E + 1));
    reserve(s.next, static_cast<std::size_t>(E));
    reserve(s.order, static_cast<std::size_t>(E));
    float* rows = s.rows.data();
    std::int64_t* row_of = s.row_of.data();
    std::int64_t* start = s.start.data();
    std::int64_t* next = s.next.data();

    // A counting sort, stable: expert e's rows are its slots in (t, j) order,
    // so what each expert sees does not depend on anything but the call.
    // Slots with no expert here (id < 0: a part's, held by another) get no row.
    std::fill(start, start + E + 1, std::int64_t{0});
    for (std::int64_t i = 0; i < slots; ++i)
        if (ids[i] >= 0) ++start[ids[i] + 1];
    for (std::int64_t e = 0; e < E; ++e) {
        next[e] = start[e];
        start[e + 1] += start[e];
    }
    for (std::int64_t i = 0; i < slots; ++i) row_of[i] = ids[i] >= 0 ? next[ids[i]]++ : -1;

    // x is read in full here, before anything is written to y: y may be x.
    const auto row_bytes = static_cast<std::size_t>(d) * sizeof(float);
    for (std::int64_t i = 0; i < slots; ++i)
        if (row_of[i] >= 0) std::memcpy(rows + row_of[i] * d, x + (i / k) * d, row_bytes);

    run_experts(s, rows, start[E]);
}

void ExpertsImpl::run(Scratch& s, const float* x, float* y, std::int64_t tokens,
                      const std::int32_t* ids, const float* weights, std::int64_t k) const {
    run_chosen(s, x, tokens, ids, k);
    const float* rows = s.rows.data();
    const std::int64_t* row_of = s.row_of.data();

    // y[t] = w[t, j0] * r_j0 for its first term j0, then y[t] = y[t] + w[t, j]
    // * r_j for the later ones, each product and each sum rounded to f32 on
    // its own (no fused multiply-add: this TU is built without contraction).
    // One order, set by j alone: the same bits for any thread count and any
    // expert order. A token with no term here (a part's) gets 0.
    for (std::int64_t t = 0; t < tokens; ++t) {
        float* yt = y + t * d;
        const float* w = weights + t * k;
        bool first = true;
        for (std::int64_t j = 0; j < k; ++j) {
            const std::int64_t row = row_of[t * k + j];
            if (row < 0) continue;
            const float* r = rows + row * d;
            const float wj = w[j];
            if (first)
                for (std::int64_t c = 0; c < d; ++c) yt[c] = wj * r[c];
            else
                for (std::int64_t c = 0; c < d; ++c) yt[c] = yt[c] + wj * r[c];
            first = false;
        }
        if (first) std::fill(yt, yt + d, 0.0f);
    }
}

// Each chosen expert once, over every row that chose it: its weights are
// read once per call. Two ways to spread that over the threads, both with
// each expert's bits fixed by its Ffn's own contract (the same for any
// thread count), so which one runs changes no bit of y:
//  - experts side by side, one per worker, each on one thread, when there
//    are at least as many chosen experts as threads and none holds more
//    than a thread's share of the rows: no barrier between the experts (a
//    decode's 8 small experts are 16 pool phases otherwise), most rows
//    first so that the last tasks are the short ones;
//  - else one expert after another, each spread over the pool by its Ffn
//    (few experts, or one that most rows chose).
// In place: the rows' x is not needed again, and one buffer is half the
// scratch.
void ExpertsImpl::run_experts(Scratch& s, float* rows, std::int64_t count) const {
    const auto E = static_cast<std::int64_t>(experts.size());
    const std::int64_t* start = s.start.data();
    std::int64_t* order = s.order.data();
    std::int64_t chosen = 0, most = 0;
    for (std::int64_t e = 0; e < E; ++e) {
        const std::int64_t n = start[e + 1] - start[e];
        if (n == 0) continue;
        order[chosen++] = e;
        most = std::max(most, n);
    }
    const auto run_one = [&](std::int64_t e) {
        float* r = rows + start[e] * d;
        const std::int64_t n = start[e + 1] - start[e];
        experts[static_cast<std::size_t>(e)].forward(r, r, n);
    };
    const bool side_by_side = pool && chosen >= threads && most * threads <= count + threads - 1;
    const PoolClaim claim(side_by_side ? pool.get() : nullptr);
    if (claim.held()) {
        // Most rows first, ties to the lower id (std::sort: stable_sort
        // would allocate its buffer on every call).
        std::sort(order, order + chosen, [&](std::int64_t a, std::int64_t b) {
            const std::int64_t na = start[a + 1] - start[a], nb = start[b + 1] - start[b];
            return na != nb ? na > nb : a < b;
        });
        // Each expert's Ffn finds the pool claimed (by this call) and runs on
        // its worker's thread alone.
        PhaseRunner runner;
        runner.run(&pool->pool(), chosen, [&](std::int64_t i, int) { run_one(order[i]); });
        return;
    }
    for (std::int64_t i = 0; i < chosen; ++i) run_one(order[i]);
}

}  // namespace swiglu::detail
