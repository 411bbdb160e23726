// Worker pools shared by every block made with the same thread count.
//
// A model's layers run one after another. Were each block to own its pool,
// the workers of the block just run would spin (thread_pool.hpp) on the very
// cores the next block's workers need: measured on a stack of 24 cyber
// blocks, 2 threads decoded slower than 1. One pool per thread count, shared,
// has exactly `threads` threads busy at any time.
//
// A claim decides which forward drives the pool: a call that finds it
// claimed (another block, or this one, running on another caller's thread)
// runs on its own thread alone and never waits.
#pragma once

#include <atomic>
#include <memory>

#include "core/thread_pool.hpp"

namespace swiglu::detail {

class SharedPool {
public:
    SharedPool(int threads, void (*on_start)()) : pool_(threads, on_start) {}

    // True when this caller may run on the pool; release() when done.
    bool try_claim() { return !claimed_.exchange(true, std::memory_order_acquire); }
    void release() { claimed_.store(false, std::memory_order_release); }

    ThreadPool& pool() { return pool_; }
    int threads() const { return pool_.threads(); }

private:
    ThreadPool pool_;
    std::atomic<bool> claimed_{false};
};

// A scope's claim on a pool (null: none to claim): held() when this caller
// drives it, released when the scope ends (normally or by an exception).
class PoolClaim {
public:
    explicit PoolClaim(SharedPool* pool) : pool_(pool && pool->try_claim() ? pool : nullptr) {}
    ~PoolClaim() {
        if (pool_) pool_->release();
    }
    PoolClaim(const PoolClaim&) = delete;
    PoolClaim& operator=(const PoolClaim&) = delete;

    bool held() const { return pool_ != nullptr; }

private:
    SharedPool* pool_;
};

// The process's pool of `threads` (>= 2) threads, made on first request and
// kept while some block holds it. Each worker calls `on_start` once; the
// first request's `on_start` is the one used. Takes a lock: construction
// time only, never a forward.
std::shared_ptr<SharedPool> shared_pool(int threads, void (*on_start)());

}  // namespace swiglu::detail
