#include "roofline.hpp"

#include "machine_probe.hpp"
#include "read_probe.hpp"

namespace swiglu_bench {

Limit roofline(const Shape& s, std::int64_t tokens, int threads, const BenchDtype& bd) {
    const MachineProbe& p = machine();
    Limit l;
    const double bytes = weight_bytes(s, bd);
    const double resident = resident_read_gbs(bytes, threads);
    l.read_gbs = resident > 0 ? resident : p.dram(threads);
    const double peak = p.peak(threads, bd.dtype);
    l.bytes_s = l.read_gbs > 0 ? bytes / (l.read_gbs * 1e9) : 0;
    l.flops_s = peak > 0 ? s.flops(tokens) / (peak * 1e9) : 0;
    return l;
}

}  // namespace swiglu_bench
