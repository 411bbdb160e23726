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

class SWIGLU_API ShardedMoeLayer {
public:
    // Collective: every rank loads layer `layer` of the checkpoint at `path`
    // (any file load_moe_layer reads) with the whole router (every rank
    // routes every token: the same ids and weights everywhere, routing is
    // deterministic), its expert_range of the routed experts only
    // (load_moe_layer_part: the other experts' bytes are never read), and,
    // on rank 0 only, the shared block and its gate. A failure on any rank
    // (a bad file, memory, fewer experts than ranks), or ranks that loaded
    // different layers (model, E, k, names, formats, dtype), throw on every
    // rank. The communicator is duplicated.
    ShardedMoeLayer(MPI_Comm comm, const std::string& path, std::int64_t layer,
                    const Options& options = {});
    // The same over MPI_COMM_WORLD.
    ShardedMoeLayer(const std::string& path, std::int64_t layer, const Options& options = {});
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
    // rank; each rank adds its experts' weighted terms (rank 0 also the
    // shared block) for every token, then one reduce-scatter and allgather
    // sum the ranks' outputs in rank order: y, the same bits on every rank
    // for a given P. Against one process: the same terms, added in another
    // order (within the f32 rounding of k + 1 additions). Arguments are
    // agreed on first; a failure anywhere throws everywhere and writes
    // nothing. y may be x. One call at a time per object.
    void forward(const float* x, float* y, std::int64_t tokens) const;

    // Seconds the last forward() spent in the collective.
    double last_collective_seconds() const;

private:
    struct Impl;
    const Impl& impl() const;  // throws after a move
    std::unique_ptr<Impl> impl_;
};

}  // namespace swiglu
