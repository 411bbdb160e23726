// Runs one phase's tasks on the pool (or the calling thread) for the
// forward and backward drivers: the first task to fail keeps its exception,
// later tasks are skipped, and it is rethrown once every thread is done.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>

#include "core/thread_pool.hpp"

namespace swiglu::detail {

class PhaseRunner {
public:
    // Calls task(t, worker) for t in [0, n); pool null runs them here.
    template <class Task>
    void run(ThreadPool* pool, std::int64_t n, Task&& task) {
        auto body = [this, &task](std::int64_t t, int worker) {
            if (failed_.load(std::memory_order_relaxed)) return;
            try {
                task(t, worker);
            } catch (...) {
                if (!failed_.exchange(true)) error_ = std::current_exception();
            }
        };
        if (pool)
            pool->run(n, body);
        else
            for (std::int64_t t = 0; t < n; ++t) body(t, 0);
        if (failed_.load()) std::rethrow_exception(error_);
    }

private:
    std::atomic<bool> failed_{false};
    std::exception_ptr error_;
};

}  // namespace swiglu::detail
