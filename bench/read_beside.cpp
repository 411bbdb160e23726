#include "read_beside.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "interleaved_timing.hpp"
#include "read_probe.hpp"

namespace swiglu_bench {
namespace {

// threads - 1 helper threads kept for the reads, so that a read of a few
// MB (0.1-0.5 ms) does not carry a thread start (tens of microseconds).
// Between a batch's reads the helpers spin, as the library's pool does;
// after kSpin without work they sleep, so that they take no core from the
// row's own batch that follows. Not the library's pool: its workers claim
// tasks as they come, and a read needs each slice on a thread of its own
// (two slices on one core would read at half the rate and flatter the row).
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
// had), made on first use and kept for the run, its pages written by as
// many threads as the process may use (so they spread as the probe's do).
struct ReadBuffer {
    float* data = nullptr;
    std::size_t floats = 0;

    ReadBuffer() {
        std::size_t bytes = std::size_t(1) << 30;
        const int writers = std::max(1, int(std::thread::hardware_concurrency()));
        data = make_read_buffer(bytes, std::size_t(256) << 20, writers);
        if (data) floats = bytes / sizeof(float);
    }
    ~ReadBuffer() { std::free(data); }
    ReadBuffer(const ReadBuffer&) = delete;
    ReadBuffer& operator=(const ReadBuffer&) = delete;
};

// `windows` windows of `window` floats from the buffer's start, taken in
// turn: at most as many as fit (past 512 MiB, the one window, which no
// cache holds), all of them for kFreshWindows.
class Windows {
public:
    Windows(const ReadBuffer& b, std::size_t window, int windows)
        : data_(b.data), window_(window), count_(b.floats / window) {
        if (windows > 0) count_ = std::min(count_, std::size_t(windows));
    }
    const float* next() {
        const float* p = data_ + i_ * window_;
        i_ = (i_ + 1) % count_;
        return p;
    }

private:
    const float* data_;
    std::size_t window_, count_, i_ = 0;
};

// One sum per thread (the caller adds them up), so the reads are not left
// out and no two threads write one variable.
struct alignas(64) Sink {
    float sum = 0;
};
volatile float g_sink = 0;

}  // namespace

ReadShare read_share(const std::function<void()>& ours, double bytes, int threads, int windows) {
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
    const std::size_t slice = window / std::size_t(threads);
    std::vector<Sink> sinks(static_cast<std::size_t>(threads));
    Windows at(buffer, window, windows);
    auto read_with = [&](ReadFn read) {
        const float* p = at.next();
        crew->run(
            [&](int i) { sinks[std::size_t(i)].sum += read(p + std::size_t(i) * slice, slice); });
    };
    // The stream count that reads these windows fastest on these threads
    // (it differs between thread counts and CPUs: read_probe.cpp): each
    // count's best of a few reads, after one that warms the crew.
    constexpr int kStreams[] = {1, 2, 4};
    ReadFn read = read_kernel(1);
    double best = 0;
    for (int streams : kStreams) {
        const ReadFn f = read_kernel(streams);
        read_with(f);
        for (int i = 0; i < 3; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            read_with(f);
            const double rate =
                1.0 / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (rate > best) {
                best = rate;
                read = f;
                share.streams = streams;
            }
        }
    }
    const PairTiming pt = time_interleaved(ours, [&] { read_with(read); });
    float sum = 0;
    for (const Sink& k : sinks) sum += k.sum;
    g_sink = g_sink + sum;
    // ratio = t_read / t_ours per round, for the same bytes.
    const double read_bytes = double(window) * sizeof(float);
    const double scale = 100.0 * bytes / read_bytes;
    share.pct = scale * pt.ratio.median;
    share.pct_p10 = scale * pt.ratio.p10;
    share.pct_p90 = scale * pt.ratio.p90;
    share.gbs = read_bytes / pt.b.median * 1e-9;
    share.doubtful = pt.doubtful();
    return share;
}

void add_read_counters(benchmark::State& st, const std::string& key,
                       const std::function<void()>& ours, double bytes, int threads, int windows) {
    static std::map<std::string, ReadShare> measured;
    auto it = measured.find(key);
    if (it == measured.end())
        it = measured.emplace(key, read_share(ours, bytes, threads, windows)).first;
    const ReadShare& r = it->second;
    if (r.pct <= 0) return;
    st.counters["read_pct"] = r.pct;
    st.counters["read_pct_p10"] = r.pct_p10;
    st.counters["read_pct_p90"] = r.pct_p90;
    st.counters["read_GBs"] = r.gbs;
    st.counters["read_streams"] = r.streams;
    st.counters["read_noisy"] = r.doubtful ? 1 : 0;
}

}  // namespace swiglu_bench
