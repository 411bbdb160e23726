// A fixed pool of worker threads for fork/join over numbered tasks.
//
// run() hands out tasks through one atomic counter; the calling thread works
// too (as worker 0), so a pool of N threads starts N-1. No allocation and no
// lock per run: between runs the workers spin for a while, and only a worker
// idle for longer than that sleeps on a condition variable (then run() pays
// one notify). A pool serves one run() at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace swiglu::detail {

class ThreadPool {
public:
    using TaskFn = void (*)(void* context, std::int64_t task, int worker);

    // `threads` >= 1, the calling thread included. Each worker thread calls
    // `on_start` (if not null) once, before its first task: the place for
    // per-thread settings of the libraries the tasks call.
    explicit ThreadPool(int threads, void (*on_start)() = nullptr);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int threads() const { return static_cast<int>(workers_.size()) + 1; }

    // Calls fn(context, task, worker) for every task in [0, tasks) and returns
    // when all are done; worker is in [0, threads()). An exception escaping fn
    // is a bug: it terminates.
    void run(std::int64_t tasks, TaskFn fn, void* context);

    template <class F>
    void run(std::int64_t tasks, F& f) {
        run(
            tasks, [](void* c, std::int64_t t, int w) { (*static_cast<F*>(c))(t, w); }, &f);
    }

private:
    void worker_main(int worker);
    void work(int worker);

    void (*on_start_)() = nullptr;
    std::vector<std::thread> workers_;
    TaskFn fn_ = nullptr;
    void* context_ = nullptr;
    std::int64_t tasks_ = 0;
    alignas(64) std::atomic<std::uint64_t> generation_{0};
    alignas(64) std::atomic<std::int64_t> next_task_{0};
    alignas(64) std::atomic<int> busy_workers_{0};
    alignas(64) std::atomic<int> sleepers_{0};
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<bool> stop_{false};
};

}  // namespace swiglu::detail
