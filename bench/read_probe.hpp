// Streaming-read bandwidth: the rate at which a well-made read kernel (a
// vector sum reduction, 8 accumulators, 1, 2 or 4 streams per thread, the
// best of them kept) brings a buffer into the cores, with T threads each
// reading its own slice. Two uses:
//   DRAM: a 1 GiB buffer, one pass per measurement (DramReader);
//   resident: a buffer of the size the benchmark's weights occupy, read over
//     and over, so the rate is that of the cache level holding them (L2, L3)
//     or DRAM when they fit in none (resident_read_gbs).
// The roofline limit of a row divides its weight bytes by the latter: the
// bandwidth of the level that holds the weights, not always DRAM's.
#pragma once

#include <cstddef>
#include <map>
#include <memory>

namespace swiglu_bench {

// A 1 GiB buffer (smaller if that cannot be allocated, down to 64 MiB),
// written once by up to `max_threads` threads so its pages exist.
class DramReader {
public:
    explicit DramReader(int max_threads);
    ~DramReader();
    DramReader(const DramReader&) = delete;
    DramReader& operator=(const DramReader&) = delete;

    explicit operator bool() const { return data_ != nullptr; }
    // GB/s (1e9 bytes/s) of `threads` threads reading the whole buffer once
    // at the same time: all bytes over (last finish - first start), the best
    // over 1, 2 and 4 streams per thread.
    double measure(int threads);
    // Streams per thread of the best measure() so far.
    int best_streams() const { return best_streams_; }

private:
    float* data_ = nullptr;
    std::size_t floats_ = 0;
    int best_streams_ = 1;
    double best_rate_ = 0;
};

// GB/s of `threads` threads reading a `bytes`-sized buffer (split between
// them) over and over: the bandwidth of the level that holds that much.
// Measured on first use (~0.3-0.5 s) and remembered per (bytes, threads).
// Footprints of 256 MiB and more return 0: the caller uses the DRAM rate.
double resident_read_gbs(double bytes, int threads);

// The ISA of the read kernels: "avx512f", "avx2" or "sse2".
const char* read_isa();

// One thread's read kernel with `streams` (1, 2 or 4) streams, for this
// CPU's ISA: sums n floats from p (n a multiple of kReadStep, p 64-byte
// aligned), so the reads cannot be left out.
using ReadFn = float (*)(const float* p, std::size_t n);
inline constexpr std::size_t kReadStep = 128;
ReadFn read_kernel(int streams);

// `bytes` (halved while it cannot be had, down to min_bytes) on 2 MiB
// boundaries with huge pages advised, as the library's weight arena is,
// written by `threads` threads so its pages exist; `bytes` is set to what
// was had. Free with std::free. Null on failure.
float* make_read_buffer(std::size_t& bytes, std::size_t min_bytes, int threads);

}  // namespace swiglu_bench
