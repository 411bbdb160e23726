#include "interleaved_timing.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace swiglu_bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time all processes used (busy jiffies of /proc/stat, in seconds) and
// this process's own (all its threads, OpenMP's included).
struct CpuClock {
    double all = -1, self = 0;

    static CpuClock now() {
        CpuClock c;
        std::ifstream in("/proc/stat");
        std::string cpu;
        unsigned long long v[8] = {};
        if (in >> cpu && cpu == "cpu") {
            bool ok = true;
            for (auto& x : v) ok = ok && static_cast<bool>(in >> x);
            const long hz = sysconf(_SC_CLK_TCK);
            if (ok && hz > 0) {
                unsigned long long busy = 0;
                for (int i = 0; i < 8; ++i)
                    if (i != 3 && i != 4) busy += v[i];  // all but idle and iowait
                c.all = double(busy) / double(hz);
            }
        }
        rusage u{};
        if (getrusage(RUSAGE_SELF, &u) == 0)
            c.self = double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                     1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
        return c;
    }
};

Timing summarize(std::vector<double> s) {
    Timing t;
    t.samples = int(s.size());
    if (s.empty()) return t;
    std::sort(s.begin(), s.end());
    auto at = [&](double q) {  // nearest rank
        const auto i = std::size_t(std::lround(q * double(s.size() - 1)));
        return s[std::min(i, s.size() - 1)];
    };
    t.median = at(0.5);
    t.p10 = at(0.1);
    t.p90 = at(0.9);
    return t;
}

// Calls for at least 20 ms (at least one), after one warm-up call when
// they are short (the other system ran last: its data in the caches, our
// pool's threads asleep); returns the mean time per call.
double batch(const std::function<void()>& f) {
    auto t0 = Clock::now();
    f();
    if (seconds_since(t0) > 0.02) return seconds_since(t0);
    t0 = Clock::now();
    int calls = 0;
    do {
        f();
        ++calls;
    } while (seconds_since(t0) < 0.02);
    return seconds_since(t0) / calls;
}

}  // namespace

double others_load(double seconds) {
    const CpuClock c0 = CpuClock::now();
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const CpuClock c1 = CpuClock::now();
    const double wall = seconds_since(t0);
    if (c0.all < 0 || c1.all < 0 || wall <= 0) return -1;
    return std::max(0.0, ((c1.all - c0.all) - (c1.self - c0.self)) / wall);
}

bool PairTiming::doubtful() const { return noisy || others > kBusyCpus; }

PairTiming time_interleaved(const std::function<void()>& a, const std::function<void()>& b) {
    const bool pair = static_cast<bool>(b);
    std::vector<double> sa, sb;
    const CpuClock c0 = CpuClock::now();
    const auto t0 = Clock::now();
    auto ratios = [&] {
        std::vector<double> r;
        for (std::size_t i = 0; i < sb.size(); ++i) r.push_back(sb[i] / sa[i]);
        return r;
    };
    auto wide = [&] {
        return (pair ? summarize(ratios()) : summarize(sa)).spread() > kNoisySpread;
    };
    // Between the systems' batches, a pause: each one's idle threads spin
    // for a while before they sleep (our pool ~0.2 ms, libgomp's up to a few
    // ms), and spinning on the cores the other needs would slow it down
    // (glass, 16 tokens: 1.2 ms per call instead of 0.05 without the pause).
    auto pause = [pair] {
        if (pair) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    };
    for (;;) {
        pause();
        sa.push_back(batch(a));
        pause();
        if (pair) sb.push_back(batch(b));
        const double elapsed = seconds_since(t0);
        // Calls of a second or so: 3 samples each once 3 s have passed.
        const bool enough =
            (sa.size() >= 5 || (sa.size() >= 3 && elapsed >= 3.0)) && elapsed >= 0.5;
        if (enough && !wide()) break;
        if (enough && (sa.size() >= 25 || elapsed >= 3.0)) break;
    }
    PairTiming r;
    r.a = summarize(sa);
    r.b = summarize(sb);
    r.ratio = summarize(ratios());
    r.noisy = wide();
    const CpuClock c1 = CpuClock::now();
    const double wall = seconds_since(t0);
    if (c0.all >= 0 && c1.all >= 0 && wall > 0)
        r.others = std::max(0.0, ((c1.all - c0.all) - (c1.self - c0.self)) / wall);
    return r;
}

}  // namespace swiglu_bench
