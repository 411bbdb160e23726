// What the MPI suites share: the rank, the world's size, a value from rank
// 0, and whether every rank holds the same bits.
#pragma once

#include <mpi.h>

#include <swiglu/mpi.hpp>
#include <swiglu/swiglu.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "moe_files.hpp"

namespace swiglu::test {

inline int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

inline int world_size() {
    int p = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    return p;
}

// Rank 0's `s` on every rank.
inline std::string broadcast(std::string s) {
    int size = static_cast<int>(s.size());
    MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD);
    s.resize(static_cast<std::size_t>(size));
    MPI_Bcast(s.data(), size, MPI_CHAR, 0, MPI_COMM_WORLD);
    return s;
}

// Whether every rank's `v` has rank 0's bits.
inline bool same_on_every_rank(const std::vector<float>& v) {
    std::vector<float> first(v);
    MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
    int same = std::memcmp(first.data(), v.data(), v.size() * sizeof(float)) == 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return same == 1;
}

// m's routed experts as ShardedMoeLayer takes them from memory: w (m's
// experts stacked in `layout`), m's router (out_in) and `rule`; no bias, no
// shared block (the caller adds them).
inline MoeArrays moe_arrays(const MoeWeights& m, const MoeWeights::Stacked& w, Layout layout,
                            const RouterRule& rule) {
    MoeArrays a;
    a.router = WeightView::out_in(m.router.data(), m.e, m.d);
    a.rule = rule;
    a.gate = w.gate.data();
    a.up = w.up.data();
    a.down = w.down.data();
    a.experts = m.e;
    a.d = m.d;
    a.f = m.f;
    a.layout = layout;
    return a;
}

// The message every rank gets from `make`, which must throw ("no error" if
// it does not).
template <class Make>
std::string error_on_every_rank(Make&& make) {
    try {
        make();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace swiglu::test
