// Everything one forward() call writes besides y: the act buffer between the
// two phases, the matmuls' inputs in the mode's format, and per-thread
// state. Sized by the precision mode (ScratchSizes) and the chunk height,
// never by the token count, and allocated once per lease slot (see ffn.cpp),
// so the hot path allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "core/packed_block.hpp"
#include "core/precision.hpp"
#include "core/tiling.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

struct WorkerState {
    explicit WorkerState(const PackedBlock& block);

    MatmulBinding& binding(PhaseId phase, bool tail, int bucket) {
        return bindings[static_cast<int>(phase)][tail ? 1 : 0][bucket];
    }

    dnnl::stream stream;
    MatmulBinding bindings[kPhases][2][kRowBuckets];               // [phase][tail][bucket]
    MatmulBinding prefill_bindings[kPhases][2][kMaxPrefillTiles];  // Phase::prefill
    AlignedBuffer<float> tile;  // one matmul result tile (f32 or s32; a prefill task's: all rows)
    AlignedBuffer<unsigned char> scratchpad;  // oneDNN's, for any kernel
    // A mode's prefill path: the weight tile this worker unpacked last, as
    // oneDNN reads it (per phase and tail width), and which one it is.
    AlignedBuffer<unsigned char> unpacked;
    dnnl::memory unpacked_weights[kPhases][2];
};

struct Workspace {
    Workspace(const PackedBlock& block, int threads);

    // The buffers a mode asked for (precision.hpp, ScratchSizes); empty
    // where it asked for none. What each holds is the mode's business:
    AlignedBuffer<float> act;                 // f32 act, kChunkRows x f
    AlignedBuffer<unsigned char> act_src;     // act as the down matmul reads it
    AlignedBuffer<unsigned char> x_prefill;   // x as a prefill path reads it; zeroed once
    AlignedBuffer<unsigned char> x_src;       // x as the gate|up matmul reads it; zeroed
                                              // once: padding rows are computed and
                                              // dropped, never uninitialised memory
    AlignedBuffer<float> x_scale, act_scale;  // per-token scales; x_scale zeroed once
    std::vector<WorkerState> workers;
};

}  // namespace swiglu::detail
