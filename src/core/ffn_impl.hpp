// What an Ffn holds: the packed block, the shared pool, the backward once it
// is enabled, and leases on scratch so that several threads can call one Ffn
// at once. The public API around it: ffn.cpp (forward), ffn_backward.cpp.
#pragma once

#include <memory>
#include <mutex>
#include <new>
#include <string>

#include <swiglu/swiglu.hpp>

#include "core/backward.hpp"
#include "core/forward.hpp"
#include "core/leased_slots.hpp"
#include "core/packed_block.hpp"
#include "core/shared_pool.hpp"
#include "core/workspace.hpp"
#include "onednn/matmul.hpp"

namespace swiglu::detail {

class FfnImpl {
public:
    FfnImpl(const WeightSource& gate, const WeightSource& up, const WeightSource& down, int threads,
            Dtype dtype, Dtype down_dtype, const BuildPolicy& policy)
        : block(gate, up, down, dtype, down_dtype, policy),
          // oneDNN stays single-threaded inside our workers (matmul.hpp).
          pool(threads > 1 ? shared_pool(threads, &serialize_onednn_on_this_thread) : nullptr),
          threads(threads),
          layouts{gate.layout, up.layout, down.layout} {}

    // Safe from several threads at once: each call leases its own scratch.
    void forward(const float* x, float* y, std::int64_t tokens, const TraceSink* trace) const;
    void backward(const float* x, const float* dy, float* dx, std::int64_t tokens,
                  const GradientSink& sink, const float* saved) const;
    // The backward's weights and kernels, built by the first caller (a
    // failed build is retried by the next).
    const BackwardBlock& backward_block() const;

    PackedBlock block;
    std::shared_ptr<SharedPool> pool;  // shared with every block of this thread count
    int threads;
    Layout layouts[3];  // how gate, up and down were given: their gradients' layouts

private:
    // Slot 0 is the pool's: used by the call that claims the pool (so by one
    // call at a time), with scratch for all its workers. A call that finds
    // the pool claimed, by this block or another, runs on its own thread
    // with the next free slot: concurrent calls never share scratch and
    // never wait on each other. Scratch is made on a slot's first use (per
    // direction) and kept.
    struct Slot {
        std::unique_ptr<Workspace> workspace;
        std::unique_ptr<BackwardWorkspace> backward;
    };
    // Calls run(slot, pool or null, workers) on a leased slot.
    template <class Run>
    void lease(Run&& run) const;

    LeasedSlots<Slot, 8> slots_;
    mutable std::once_flag backward_once_;
    mutable std::unique_ptr<BackwardBlock> backward_;
};

template <class Run>
void FfnImpl::lease(Run&& run) const {
    OmpSerialScope serial;
    {
        const PoolClaim claim(pool.get());
        if (claim.held()) {
            run(slots_.unleased(0), &pool->pool(), threads);
            return;
        }
    }
    // Without a pool, slot 0 serves single-threaded calls like the others.
    slots_.lease([&](Slot& slot) { run(slot, static_cast<ThreadPool*>(nullptr), 1); },
                 pool ? 1 : 0);
}

// Runs `f`, turning the exceptions of our dependencies into swiglu::Error.
template <class F>
auto errors_as_swiglu(const char* what, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const Error&) {
        throw;
    } catch (const dnnl::error& e) {
        rethrow_dnnl(e, what);
    } catch (const std::bad_alloc&) {
        throw Error(Status::out_of_memory, std::string(what) + ": out of memory");
    } catch (const std::exception& e) {
        throw Error(Status::internal, std::string(what) + ": " + e.what());
    }
}

}  // namespace swiglu::detail
