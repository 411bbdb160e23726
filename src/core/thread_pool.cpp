#include "core/thread_pool.hpp"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SWIGLU_PAUSE() _mm_pause()
#else
#define SWIGLU_PAUSE() std::this_thread::yield()
#endif

namespace swiglu::detail {

namespace {
// How long an idle worker spins before it sleeps. Long enough to bridge the
// gap between two phases or two decode steps, short enough not to steal a
// core from the rest of the process for long.
constexpr auto kSpin = std::chrono::microseconds(200);
}  // namespace

ThreadPool::ThreadPool(int threads, void (*on_start)()) : on_start_(on_start) {
    workers_.reserve(threads > 1 ? threads - 1 : 0);
    for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { worker_main(w); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_.store(true);
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::work(int worker) {
    for (;;) {
        const std::int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
        if (task >= tasks_) return;
        fn_(context_, task, worker);
    }
}

void ThreadPool::run(std::int64_t tasks, TaskFn fn, void* context) {
    if (workers_.empty() || tasks <= 1) {
        for (std::int64_t t = 0; t < tasks; ++t) fn(context, t, 0);
        return;
    }
    fn_ = fn;
    context_ = context;
    tasks_ = tasks;
    next_task_.store(0, std::memory_order_relaxed);
    busy_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    // seq_cst pairs with the sleeper's increment below: either we see it and
    // notify, or it sees the new generation before it waits.
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) {
        std::lock_guard<std::mutex> lock(mutex_);
        wake_.notify_all();
    }
    work(0);
    while (busy_workers_.load(std::memory_order_acquire) != 0) SWIGLU_PAUSE();
}

void ThreadPool::worker_main(int worker) {
    if (on_start_) on_start_();
    std::uint64_t seen = 0;
    for (;;) {
        std::uint64_t now = generation_.load(std::memory_order_acquire);
        if (now == seen) {
            const auto deadline = std::chrono::steady_clock::now() + kSpin;
            for (int i = 0; now == seen; ++i) {
                SWIGLU_PAUSE();
                now = generation_.load(std::memory_order_acquire);
                if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
            }
        }
        if (now == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            sleepers_.fetch_add(1);
            wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
            sleepers_.fetch_sub(1);
            now = generation_.load(std::memory_order_acquire);
        }
        if (stop_.load(std::memory_order_acquire)) return;
        seen = now;
        work(worker);
        busy_workers_.fetch_sub(1, std::memory_order_release);
    }
}

}  // namespace swiglu::detail
