// Timing two systems so that a shared, noisy machine cannot make up a ratio
// between them (the profile's ffn and baseline): batches of calls of one and
// of the other alternate, so both see the same machine; each batch is one
// sample (its mean time per call); the result is the median with its spread
// (p10, p90), measured longer while the spread is wide and flagged when it
// stays wide. The CPU time other processes took meanwhile is measured too.
#pragma once

#include <functional>

namespace swiglu_bench {

struct Timing {
    double median = 0, p10 = 0, p90 = 0;  // seconds per call
    int samples = 0;
    // (p90 - p10) / median: 0.2 means the middle 80 % of samples lie
    // within 20 % of the median's size.
    double spread() const { return median > 0 ? (p90 - p10) / median : 0; }
};

struct PairTiming {
    Timing a, b;  // b.samples == 0 when there was no b
    // b's time over a's, per round (each round times a batch of each, one
    // right after the other, so a slowdown of the machine that hits both
    // cancels out): median and spread of those ratios.
    Timing ratio;
    bool noisy = false;  // the spread that matters (ratio's, or a's alone) stayed wide
    double others = -1;  // CPUs' worth of time other processes used meanwhile (-1: unknown)
    // What no figure should be quoted from: noisy, or other processes took
    // over kBusyCpus CPUs' worth of time meanwhile.
    bool doubtful() const;
};

// A spread above this after the longest measurement marks the row noisy:
// the ratio's when there is a b, a's otherwise.
inline constexpr double kNoisySpread = 0.2;
// Other processes using this many CPUs' worth of time mark the row busy.
inline constexpr double kBusyCpus = 0.25;

// Times `a` and, if not empty, `b`, interleaved: at least 5 samples each
// (3 for calls so long that 5 would take over 3 s) and 0.5 s in all; while
// the spread that matters is above kNoisySpread, up to 25 samples each or 3 s.
PairTiming time_interleaved(const std::function<void()>& a, const std::function<void()>& b);

// CPUs' worth of time other processes use over the next `seconds` (this
// process sleeps meanwhile); -1 if /proc/stat can't be read.
double others_load(double seconds);

}  // namespace swiglu_bench
