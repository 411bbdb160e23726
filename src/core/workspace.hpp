// Everything one forward() call writes besides y: the act buffer between the
// two phases, the matmuls' inputs in the format's, and per-thread state
// (TileWorker, engine.hpp). Sized by the numerics (ScratchSizes) and the chunk height,
// never by the token count, and allocated once per lease slot (see ffn.cpp),
// so the hot path allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "core/engine.hpp"
#include "core/packed_block.hpp"
#include "core/tiling.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

struct Workspace {
    Workspace(const PackedBlock& block, int threads);

    // The buffers the numerics asked for (numerics.hpp, ScratchSizes);
    // empty where it asked for none. What each holds is its business:
    AlignedBuffer<float> act;                 // f32 act, kChunkRows x f
    AlignedBuffer<unsigned char> act_src;     // act as the down matmul reads it
    AlignedBuffer<unsigned char> x_prefill;   // x as a prefill path reads it; zeroed once
    AlignedBuffer<unsigned char> x_src;       // x as the gate|up matmul reads it; zeroed
                                              // once: padding rows are computed and
                                              // dropped, never uninitialised memory
    AlignedBuffer<float> x_scale, act_scale;  // per-token scales; x_scale zeroed once
    std::vector<TileWorker> workers;
};

}  // namespace swiglu::detail
