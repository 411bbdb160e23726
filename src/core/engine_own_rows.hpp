// An engine of oneDNN's kernels whose short row tiles run a kernel of our
// own over the very tiles oneDNN packed, without a second copy of the
// weights (core/engine_s8.cpp, core/engine_bf16.cpp): oneDNN makes the
// kernels and packs; every tile it packs is checked against the layout our
// kernel reads, and one that differs leaves every tile to oneDNN.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "core/engine.hpp"

namespace swiglu::detail {

class OwnRowsEngine : public TileEngine {
public:
    void make_kernels(Phase& first, Phase& second, int min_bucket, bool streamed) final {
        onednn_->make_kernels(first, second, min_bucket, streamed);
    }
    dnnl::memory::desc tile_layout(const Phase& phase, std::int64_t tile) const final {
        return onednn_->tile_layout(phase, tile);
    }
    void pack(const Phase& phase, const PlainWeights& plain, std::int64_t k, std::int64_t n,
              const dnnl::memory& to) final {
        onednn_->pack(phase, plain, k, n, to);
        if (own_rows_max_ > 0 && !packed_as_ours(to, k, n, plain)) {
            own_rows_max_ = 0;
            note_.clear();
        }
    }

protected:
    // own_rows_max: the tallest row tiles ours takes (0: none), as
    // TileEngine's; `onednn`: the engine of oneDNN's kernels underneath.
    OwnRowsEngine(EngineKind kind, EngineGeometry geometry, std::int64_t own_rows_max,
                  std::string note, KernelDemand demand, std::unique_ptr<TileEngine> onednn)
        : TileEngine(kind, geometry, own_rows_max, std::move(note)), onednn_(std::move(onednn)) {
        demand_ = demand;
    }
    // Whether `to`, packed by oneDNN from the (k x n) `plain`, holds it
    // exactly as our kernel reads it. Load time only: it may read every
    // weight.
    virtual bool packed_as_ours(const dnnl::memory& to, std::int64_t k, std::int64_t n,
                                const PlainWeights& plain) const = 0;

    std::unique_ptr<TileEngine> onednn_;
};

}  // namespace swiglu::detail
