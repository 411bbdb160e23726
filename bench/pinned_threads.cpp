#include "pinned_threads.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstddef>
#include <vector>

namespace swiglu_bench {

namespace {

std::vector<int> affinity_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    return cpus;
}

}  // namespace

void run_pinned(int n, const std::function<void(int)>& fn) {
    static const std::vector<int> cpus = affinity_cpus();
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&fn, i] {
            if (!cpus.empty()) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(cpus[static_cast<std::size_t>(i) % cpus.size()], &set);
                pthread_setaffinity_np(pthread_self(), sizeof set, &set);
            }
            fn(i);
        });
    }
    for (auto& t : threads) t.join();
}

}  // namespace swiglu_bench
