// Throughput of the fused SiLU(gate) * up kernels, one benchmark per ISA this
// CPU runs (scalar included, as the baseline) and per length:
//   activation/silu_mul/<isa>/n:<n>
// n = 341 (a short row, not a multiple of any vector width), 4096, 11008
// (LLaMA-7B's FFN width) and 65536 (3 x 256 KiB: past L2 on most CPUs).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "kernels/kernel_table.hpp"

namespace {

using swiglu::detail::Isa;
using SiluMulFn = decltype(swiglu::detail::KernelTable::silu_mul);

void silu_mul_bench(benchmark::State& state, SiluMulFn fn, std::size_t n) {
    std::vector<float> gate(n), up(n), out(n);
    // Gate over [-8, 8): both branches of the sigmoid, as in a real FFN.
    for (std::size_t i = 0; i < n; ++i) {
        gate[i] = -8.0f + 16.0f * static_cast<float>((i * 7919) % 1024) / 1024.0f;
        up[i] = 0.5f + static_cast<float>(i % 13) * 0.125f;
    }
    for (auto _ : state) {
        fn(gate.data(), up.data(), out.data(), n);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    const auto elems = static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n);
    state.SetItemsProcessed(elems);
    state.SetBytesProcessed(elems *
                            static_cast<std::int64_t>(3 * sizeof(float)));  // 2 reads + 1 write
    // A rate of n * 1e-9 per iteration, inverted: seconds * 1e9 / elements,
    // i.e. nanoseconds per element (the console appends "s" to any inverted
    // rate, but the number, also in JSON, is in ns).
    state.counters["ns_per_elem"] = benchmark::Counter(
        static_cast<double>(n) * 1e-9,
        benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

const bool registered = [] {
    for (const auto& entry : swiglu::detail::kernel_dispatch().runnable()) {
        const Isa isa = entry.isa;
        const SiluMulFn fn = entry.table.silu_mul;
        for (std::size_t n : {341, 4096, 11008, 65536}) {
            const std::string name = std::string("activation/silu_mul/") +
                                     swiglu::detail::isa_name(isa) + "/n:" + std::to_string(n);
            benchmark::RegisterBenchmark(name.c_str(), silu_mul_bench, fn, n);
        }
    }
    return true;
}();

}  // namespace
