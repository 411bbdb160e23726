// Read kernels and the two bandwidth measurements of read_probe.hpp.
//
// Why several streams: one core's DRAM rate is bounded by the misses it
// keeps in flight, and the hardware prefetchers run ahead of each stream
// separately. On an AMD EPYC (Zen 3) here, one thread read 1 GiB at
// 19-21.5 GB/s as one stream and 22.4-24.7 GB/s as two interleaved halves;
// software prefetch 1-4 KiB ahead read slower (15-17 GB/s). Which count wins
// differs between CPUs, so every measurement tries 1, 2 and 4 and keeps the
// best: the probe reports what a well-made streaming kernel reaches.
#include "read_probe.hpp"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include "pinned_threads.hpp"

namespace swiglu_bench {
namespace {

using Clock = std::chrono::steady_clock;

// Floats per step of every read kernel: a slice is a multiple of this, so
// each of up to 4 streams is a multiple of one step of its kernel.
constexpr std::size_t kStep = kReadStep;

// S streams (the slice's S parts, read interleaved), 8 accumulators between
// them; n a multiple of kStep, p 64-byte aligned.
template <int S>
__attribute__((target("avx512f"))) float read_avx512(const float* p, std::size_t n) {
    constexpr int kPer = 8 / S;  // vectors per stream per step
    const std::size_t len = n / S;
    __m512 acc[8];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (std::size_t i = 0; i < len; i += 16 * kPer)
        for (int s = 0; s < S; ++s)
            for (int v = 0; v < kPer; ++v)
                acc[s * kPer + v] =
                    _mm512_add_ps(acc[s * kPer + v], _mm512_load_ps(p + s * len + i + 16 * v));
    for (int a = 1; a < 8; ++a) acc[0] = _mm512_add_ps(acc[0], acc[a]);
    alignas(64) float lanes[16];  // (_mm512_reduce_add_ps warns in GCC 12)
    _mm512_store_ps(lanes, acc[0]);
    float sum = 0;
    for (float v : lanes) sum += v;
    return sum;
}

template <int S>
__attribute__((target("avx2"))) float read_avx2(const float* p, std::size_t n) {
    constexpr int kPer = 8 / S;
    const std::size_t len = n / S;
    __m256 acc[8];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (std::size_t i = 0; i < len; i += 8 * kPer)
        for (int s = 0; s < S; ++s)
            for (int v = 0; v < kPer; ++v)
                acc[s * kPer + v] =
                    _mm256_add_ps(acc[s * kPer + v], _mm256_load_ps(p + s * len + i + 8 * v));
    for (int a = 1; a < 8; ++a) acc[0] = _mm256_add_ps(acc[0], acc[a]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    float sum = 0;
    for (float v : lanes) sum += v;
    return sum;
}

template <int S>
float read_sse2(const float* p, std::size_t n) {
    constexpr int kPer = 8 / S;
    const std::size_t len = n / S;
    __m128 acc[8];
    for (auto& a : acc) a = _mm_setzero_ps();
    for (std::size_t i = 0; i < len; i += 4 * kPer)
        for (int s = 0; s < S; ++s)
            for (int v = 0; v < kPer; ++v)
                acc[s * kPer + v] =
                    _mm_add_ps(acc[s * kPer + v], _mm_load_ps(p + s * len + i + 4 * v));
    for (int a = 1; a < 8; ++a) acc[0] = _mm_add_ps(acc[0], acc[a]);
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, acc[0]);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

constexpr int kStreamCounts[] = {1, 2, 4};

struct ReadKernels {
    const char* isa;
    ReadFn by_streams[3];  // 1, 2, 4 streams
};

const ReadKernels& read_kernels() {
    static const ReadKernels k = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f"))
            return ReadKernels{"avx512f", {read_avx512<1>, read_avx512<2>, read_avx512<4>}};
        if (__builtin_cpu_supports("avx2"))
            return ReadKernels{"avx2", {read_avx2<1>, read_avx2<2>, read_avx2<4>}};
        return ReadKernels{"sse2", {read_sse2<1>, read_sse2<2>, read_sse2<4>}};
    }();
    return k;
}

volatile float g_sink = 0;

// Thread i's slice of `floats`: a multiple of kStep.
std::pair<std::size_t, std::size_t> slice(std::size_t floats, int i, int threads) {
    const std::size_t steps = floats / kStep;
    return {steps * std::size_t(i) / std::size_t(threads) * kStep,
            steps * std::size_t(i + 1) / std::size_t(threads) * kStep};
}

// GB/s of `threads` threads each reading its slice of data[0, floats)
// `passes` times with `read`: all bytes over (last finish - first start).
double timed_read(ReadFn read, const float* data, std::size_t floats, int threads, int passes) {
    std::vector<Clock::time_point> start(static_cast<std::size_t>(threads)),
        stop(static_cast<std::size_t>(threads));
    SpinBarrier barrier(threads);
    run_pinned(threads, [&](int i) {
        const auto [lo, hi] = slice(floats, i, threads);
        float sum = 0;
        barrier.wait();
        start[std::size_t(i)] = Clock::now();
        for (int p = 0; p < passes; ++p) sum += read(data + lo, hi - lo);
        stop[std::size_t(i)] = Clock::now();
        g_sink = g_sink + sum;
    });
    const auto t0 = *std::min_element(start.begin(), start.end());
    const auto t1 = *std::max_element(stop.begin(), stop.end());
    const double bytes = double(floats / kStep * kStep) * sizeof(float) * passes;
    return bytes / std::chrono::duration<double>(t1 - t0).count() * 1e-9;
}

}  // namespace

float* make_read_buffer(std::size_t& bytes, std::size_t min_bytes, int threads) {
    const std::size_t align = std::size_t(2) << 20;
    float* data = nullptr;
    for (; bytes >= min_bytes; bytes /= 2) {
        const std::size_t rounded = (bytes + align - 1) / align * align;
        data = static_cast<float*>(std::aligned_alloc(align, rounded));
        if (data) break;
    }
    if (!data) return nullptr;
    madvise(data, bytes, MADV_HUGEPAGE);
    const std::size_t floats = bytes / sizeof(float);
    run_pinned(threads, [&](int i) {
        const std::size_t lo = floats * std::size_t(i) / std::size_t(threads);
        const std::size_t hi = floats * std::size_t(i + 1) / std::size_t(threads);
        std::fill(data + lo, data + hi, 1.0f);
    });
    return data;
}

ReadFn read_kernel(int streams) {
    const ReadKernels& k = read_kernels();
    return streams >= 4 ? k.by_streams[2] : streams >= 2 ? k.by_streams[1] : k.by_streams[0];
}

DramReader::DramReader(int max_threads) {
    std::size_t bytes = std::size_t(1) << 30;
    data_ = make_read_buffer(bytes, std::size_t(64) << 20, std::max(1, max_threads));
    if (data_) floats_ = bytes / sizeof(float);
}

DramReader::~DramReader() { std::free(data_); }

double DramReader::measure(int threads) {
    if (!data_) return 0;
    double best = 0;
    for (int s = 0; s < 3; ++s) {
        const double rate = timed_read(read_kernels().by_streams[s], data_, floats_, threads, 1);
        best = std::max(best, rate);
        if (rate > best_rate_) {
            best_rate_ = rate;
            best_streams_ = kStreamCounts[s];
        }
    }
    return best;
}

double resident_read_gbs(double bytes, int threads) {
    constexpr double kDramFootprint = double(std::size_t(256) << 20);
    if (!(bytes > 0) || bytes >= kDramFootprint || threads < 1) return 0;
    static std::mutex mutex;
    static std::map<std::pair<std::size_t, int>, double> known;
    // At least one step per thread and stream.
    std::size_t size = std::max(std::size_t(bytes), std::size_t(threads) * 4 * kStep * 4);
    const std::lock_guard<std::mutex> lock(mutex);
    const auto key = std::make_pair(size, threads);
    if (const auto it = known.find(key); it != known.end()) return it->second;
    float* data = make_read_buffer(size, size, threads);
    if (!data) return 0;
    const std::size_t floats = size / sizeof(float);
    // Passes for ~20 ms per timing, from one warm-up pass (which also
    // brings the buffer into the cache that holds it); 5 rounds, as a small
    // buffer's rate swings more with what else the cores do.
    const double first = timed_read(read_kernels().by_streams[0], data, floats, threads, 1);
    const double pass_seconds = double(size) / (std::max(first, 1.0) * 1e9);
    const int passes = std::max(1, int(0.02 / pass_seconds));
    double best = 0;
    for (int round = 0; round < 5; ++round)
        for (ReadFn read : read_kernels().by_streams)
            best = std::max(best, timed_read(read, data, floats, threads, passes));
    std::free(data);
    known[key] = best;
    return best;
}

const char* read_isa() { return read_kernels().isa; }

}  // namespace swiglu_bench
