#include "read_beside.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "interleaved_timing.hpp"
#include "machine_probe.hpp"
#include "read_probe.hpp"

namespace swiglu_bench {
namespace {

// threads - 1 helper threads kept for the reads, so that a read of a few
// MB (0.1-0.5 ms) does not carry a thread start (tens of microseconds).
// Between a batch's reads the helpers spin, as the library's pool does;
// after kSpin without work they sleep, so that they take no core from the
// row's own batch that follows.
class ReadCrew {
public:
    explicit ReadCrew(int threads) : threads_(threads) {
        for (int i = 1; i < threads; ++i) helpers_.emplace_back([this, i] { serve(i); });
    }
    ~ReadCrew() {
        stop_.store(true);
        wake();
        for (auto& t : helpers_) t.join();
    }
    ReadCrew(const ReadCrew&) = delete;
    ReadCrew& operator=(const ReadCrew&) = delete;

    int threads() const { return threads_; }

    // fn(0) on the calling thread, fn(i) on helper i; returns when all are done.
    template <class Fn>
    void run(const Fn& fn) {
        job_ = [&fn](int i) { fn(i); };
        pending_.store(threads_ - 1);
        wake();
        fn(0);
        while (pending_.load() != 0) _mm_pause();
    }

private:
    static constexpr std::chrono::microseconds kSpin{200};

    // A new generation, and the sleepers woken. The generation is bumped
    // before the sleepers are counted (both seq_cst): a helper about to
    // sleep either is counted here and woken under the mutex, or sees the
    // new generation in its wait's predicate.
    void wake() {
        generation_.fetch_add(1);
        if (sleepers_.load() > 0) {
            const std::lock_guard<std::mutex> lock(mutex_);
            wakeup_.notify_all();
        }
    }

    void serve(int i) {
        std::uint64_t seen = 0;
        for (;;) {
            const auto t0 = std::chrono::steady_clock::now();
            while (generation_.load() == seen && std::chrono::steady_clock::now() - t0 < kSpin)
                _mm_pause();
            if (generation_.load() == seen) {
                std::unique_lock<std::mutex> lock(mutex_);
                sleepers_.fetch_add(1);
                wakeup_.wait(lock, [&] { return generation_.load() != seen; });
                sleepers_.fetch_sub(1);
            }
            seen = generation_.load();
            if (stop_.load()) return;
            job_(i);
            pending_.fetch_sub(1);
        }
    }

    const int threads_;
    std::vector<std::thread> helpers_;
    std::function<void(int)> job_;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    std::atomic<int> sleepers_{0};
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::condition_variable wakeup_;
};

// The 1 GiB buffer (as the probe's; down to 256 MiB if that cannot be
// had), made on first use and kept for the run, and where the next
// window starts.
struct ReadBuffer {
    float* data = nullptr;
    std::size_t floats = 0;
    std::size_t next = 0;

    ReadBuffer() {
        std::size_t bytes = std::size_t(1) << 30;
        data = make_read_buffer(bytes, std::size_t(256) << 20, 1);
        if (data) floats = bytes / sizeof(float);
    }
    ~ReadBuffer() { std::free(data); }
    ReadBuffer(const ReadBuffer&) = delete;
    ReadBuffer& operator=(const ReadBuffer&) = delete;

    // The next window of `window` floats: after the last one, or back at
    // the start when it would run past the end.
    const float* take(std::size_t window) {
        if (next + window > floats) next = 0;
        const float* p = data + next;
        next += window;
        return p;
    }
};

volatile float g_sink = 0;

}  // namespace

ReadShare read_share(const std::function<void()>& ours, double bytes, int threads, int streams) {
    static ReadBuffer buffer;
    static std::unique_ptr<ReadCrew> crew;
    ReadShare share;
    threads = std::max(1, threads);
    // Each thread's slice a whole number of the kernel's steps.
    const std::size_t unit = kReadStep * std::size_t(threads);
    const std::size_t window = std::size_t(bytes / sizeof(float)) / unit * unit;
    if (!buffer.data || window == 0 || window > buffer.floats) return share;
    if (!crew || crew->threads() != threads) {
        crew.reset();
        crew = std::make_unique<ReadCrew>(threads);
    }
    const ReadFn read = read_kernel(streams);
    const std::size_t slice = window / std::size_t(threads);
    auto read_window = [&] {
        const float* p = buffer.take(window);
        crew->run([&](int i) { g_sink = g_sink + read(p + std::size_t(i) * slice, slice); });
    };
    const PairTiming pt = time_interleaved(ours, read_window);
    // ratio = t_read / t_ours per round, for the same bytes.
    const double read_bytes = double(window) * sizeof(float);
    const double scale = 100.0 * bytes / read_bytes;
    share.pct = scale * pt.ratio.median;
    share.pct_p10 = scale * pt.ratio.p10;
    share.pct_p90 = scale * pt.ratio.p90;
    share.gbs = read_bytes / pt.b.median * 1e-9;
    share.noisy = pt.noisy;
    share.others = pt.others;
    return share;
}

void add_read_counters(benchmark::State& st, const std::function<void()>& ours, double bytes,
                       int threads) {
    const ReadShare r = read_share(ours, bytes, threads, machine().dram_streams);
    if (r.pct <= 0) return;
    st.counters["read_pct"] = r.pct;
    st.counters["read_pct_p10"] = r.pct_p10;
    st.counters["read_pct_p90"] = r.pct_p90;
    st.counters["read_GBs"] = r.gbs;
    st.counters["read_noisy"] = r.noisy ? 1 : 0;
}

}  // namespace swiglu_bench
