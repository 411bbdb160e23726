// Threads for the machine probes: each pinned to its own CPU of this
// process's affinity set, started together through a spinning barrier, so
// that T threads measure T cores at once.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

namespace swiglu_bench {

// All threads leave wait() together; reusable.
class SpinBarrier {
public:
    explicit SpinBarrier(int n) : n_(n) {}
    void wait() {
        const int gen = gen_.load(std::memory_order_acquire);
        if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
            count_.store(0, std::memory_order_relaxed);
            gen_.fetch_add(1, std::memory_order_acq_rel);
            return;
        }
        while (gen_.load(std::memory_order_acquire) == gen) std::this_thread::yield();
    }

private:
    const int n_;
    std::atomic<int> count_{0};
    std::atomic<int> gen_{0};
};

// Runs fn(i) on `n` new threads, thread i pinned to the i-th CPU of this
// process's affinity set (mod its size); returns when all are done.
void run_pinned(int n, const std::function<void(int)>& fn);

}  // namespace swiglu_bench
