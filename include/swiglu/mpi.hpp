// swiglu_mpi: one SwiGLU block sharded over the ranks of an MPI communicator
// (Megatron-style tensor parallelism), in a library of its own so that
// swiglu itself never depends on MPI.
//
// Rank r of P holds hidden columns [f r / P, f (r + 1) / P) (shard_range) of
// W_gate and W_up and the matching rows of W_down, runs that block on its
// own threads, and the partial outputs are summed by one collective per
// call: a reduce-scatter (MPI_Alltoallv, then a sum in rank order) and an
// allgather, so every rank gets the same bits whatever the thread counts or
// MPI's algorithms, for a given P.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include <swiglu/checkpoint.hpp>
#include <swiglu/moe.hpp>
#include <swiglu/swiglu.hpp>

namespace swiglu {

// Hidden columns [begin, end) of a block's f held by `rank` of `ranks`:
// f r / P rounded to a multiple of 64 (the packing's tile width) where f
// has at least 64 columns per rank, else of 32 (GGUF's quantised blocks)
// where it has 32, exact otherwise. A rank may hold none (f < P).
struct ShardRange {
    std::int64_t begin = 0, end = 0;
    std::int64_t size() const { return end - begin; }
};
SWIGLU_API ShardRange shard_range(std::int64_t f, int rank, int ranks);
// The same for weights whose formats have blocks of `block` values
// (block_values, swiglu/checkpoint.hpp): a block larger than 64 (the
// K-quants' 256) is never cut, boundaries lie on its multiples even where
// that leaves ranks none; smaller ones as above (the form above is block 32).
SWIGLU_API ShardRange shard_range(std::int64_t f, int rank, int ranks, std::int64_t block);

class SWIGLU_API ShardedFfn {
public:
    // Collective over `comm`: every rank passes the block's full weights
    // (views, as for Ffn; ranks may hold them in different layouts) and
    // packs only its shard. A failure on any rank (bad weights, memory)
    // throws on every rank, naming the rank and its message. The
    // communicator is duplicated: the caller's stays free for other traffic.
    ShardedFfn(MPI_Comm comm, const WeightView& gate, const WeightView& up, const WeightView& down,
               const Options& options = {});
    // The same over MPI_COMM_WORLD.
    ShardedFfn(const WeightView& gate, const WeightView& up, const WeightView& down,
               const Options& options = {});
    // Collective: every rank loads only its shard of the block `selector`
    // chooses in the checkpoint at `path` (any format and naming scheme
    // load_ffn reads): load_ffn_slice with its shard_range, so that the
    // other ranks' bytes of the mapped file are never read. Ranks may pass
    // different paths (each machine its own copy); a failure on any rank,
    // or blocks that differ (shape, scheme, tensor names, dtypes), throw on
    // every rank.
    ShardedFfn(MPI_Comm comm, const std::string& path, const WeightSelector& selector = {},
               const Options& options = {});
    // The same over MPI_COMM_WORLD.
    explicit ShardedFfn(const std::string& path, const WeightSelector& selector = {},
                        const Options& options = {});
    ~ShardedFfn();
    ShardedFfn(ShardedFfn&&) noexcept;
    ShardedFfn& operator=(ShardedFfn&&) noexcept;
    ShardedFfn(const ShardedFfn&) = delete;
    ShardedFfn& operator=(const ShardedFfn&) = delete;

    std::int64_t d() const;
    std::int64_t f() const;
    int rank() const;
    int ranks() const;
    ShardRange shard() const;

    // Collective: every rank calls it with the same x (tokens, d) and gets
    // y = block(x), the same bits on every rank. Arguments are checked on
    // every rank and agreed on (one small allreduce): a bad call on any rank
    // throws on every rank and writes nothing. y may be x (in place). One
    // call at a time per ShardedFfn (MPI calls from one thread).
    void forward(const float* x, float* y, std::int64_t tokens) const;

    // Seconds the last forward() spent in the collective (its share of the
    // time, for the benchmark).
    double last_collective_seconds() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// ---- Expert parallelism: a Mixture-of-Experts layer over the ranks ---------

// The routed experts [E r / P, E (r + 1) / P) held by `rank` of `ranks`
// (contiguous, sizes differing by at most one). Throws invalid_argument
// unless experts >= ranks >= 1 (every rank holds one) and rank in [0, ranks).
SWIGLU_API ShardRange expert_range(std::int64_t experts, int rank, int ranks);

// A whole MoE layer in memory, as MoeLayer and Experts::stacked take it
// (swiglu/moe.hpp), for ShardedMoeLayer.
struct MoeArrays {
    WeightView router;  // E x d (out_in) or d x E (in_out), f32
    RouterRule rule;
    const float* bias = nullptr;  // E floats (DeepSeek-V3's e_score_correction_bias), or null
    // The E routed experts stacked, each expert's matrices one after
    // another: out_in (PyTorch's): gate, up (E, f, d), down (E, d, f);
    // in_out: gate, up (E, d, f), down (E, f, d).
    const float* gate = nullptr;
    const float* up = nullptr;
    const float* down = nullptr;
    std::int64_t experts = 0, d = 0, f = 0;
    Layout layout = Layout::out_in;
    // The shared block (its own f), or null; its gate (d floats: g(x) =
    // sigmoid(x . shared_gate)), or null for g = 1.
    const ExpertWeights* shared = nullptr;
    const float* shared_gate = nullptr;
};

class SWIGLU_API ShardedMoeLayer {
public:
    // Collective: every rank loads layer `layer` of the checkpoint at `path`
    // (any file load_moe_layer reads) with the whole router (every rank
    // routes every token: the same ids and weights everywhere, given the
    // same x, router and bias on every rank and CPUs whose router rounding
    // agrees; forward() checks it), its expert_range of the routed experts only
    // (load_moe_layer_part: the other experts' bytes are never read), and,
    // on rank 0 only, the shared block and its gate. A failure on any rank
    // (a bad file, memory, fewer experts than ranks), or ranks that loaded
    // different layers (model, E, k, names, formats, dtype), throw on every
    // rank. The communicator is duplicated.
    ShardedMoeLayer(MPI_Comm comm, const std::string& path, std::int64_t layer,
                    const Options& options = {});
    // The same over MPI_COMM_WORLD.
    ShardedMoeLayer(const std::string& path, std::int64_t layer, const Options& options = {});
    // Collective: every rank passes the whole layer in memory (the same
    // values everywhere; each rank's own copy) and packs only its
    // expert_range of the routed experts (Experts::stacked from that offset
    // of the arrays: the others are never read) and, on rank 0 only, the
    // shared block. Every rank keeps the whole router. Errors as above,
    // and ranks that passed different shapes, layouts, rules, dtypes or
    // router and bias values throw on every rank. The arrays may be freed
    // afterwards.
    ShardedMoeLayer(MPI_Comm comm, const MoeArrays& arrays, const Options& options = {});
    // The same over MPI_COMM_WORLD.
    explicit ShardedMoeLayer(const MoeArrays& arrays, const Options& options = {});
    ~ShardedMoeLayer();
    ShardedMoeLayer(ShardedMoeLayer&&) noexcept;
    ShardedMoeLayer& operator=(ShardedMoeLayer&&) noexcept;
    ShardedMoeLayer(const ShardedMoeLayer&) = delete;
    ShardedMoeLayer& operator=(const ShardedMoeLayer&) = delete;

    std::int64_t d() const;
    std::int64_t experts() const;  // E, the layer's routed experts
    int rank() const;
    int ranks() const;
    ShardRange held() const;  // this rank's experts
    // This rank's part (MoeLayer::part): route() is the whole layer's.
    const MoeLayer& local() const;

    // Collective, as ShardedFfn::forward: the same x (tokens, d) on every
    // rank; each rank routes every token and computes its experts' weighted
    // terms (MoeLayer::terms; rank 0 also the shared block's), the terms go
    // to the rank owning their token (rank q: tokens [T q / P, T (q + 1) /
    // P)), which adds them in one process's order, and the token slices are
    // gathered: y is one process's MoeLayer::forward bit for bit, for any P
    // and thread counts, on every rank. Arguments are agreed on first, and
    // the routing's fingerprint with them: ranks that routed differently (x,
    // router or bias not identical everywhere, or CPUs whose router rounding
    // differs) throw invalid_argument ("ranks routed differently") on every
    // rank. A failure anywhere throws everywhere and writes nothing. y may
    // be x.
    // One call at a time per object.
    void forward(const float* x, float* y, std::int64_t tokens) const;

    // Seconds the last forward() spent in the collective (0 after a call
    // of no tokens, or one that failed).
    double last_collective_seconds() const;

private:
    struct Impl;
    const Impl& impl() const;  // throws after a move
    std::unique_ptr<Impl> impl_;
};

}  // namespace swiglu
