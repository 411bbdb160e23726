// swiglu::cpu_features(): the CPU's SIMD features that matter to the kernels
// and to oneDNN, for `swiglu info` and logs.
#include <swiglu/swiglu.hpp>

#include <cpuid.h>

namespace swiglu {

namespace {
// clang 14 has no __builtin_cpu_supports("f16c"): ask CPUID directly.
bool has_f16c() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
}  // namespace

std::string cpu_features() {
    __builtin_cpu_init();
    std::string out;
    auto add = [&](bool has, const char* name) {
        if (!has) return;
        if (!out.empty()) out += ' ';
        out += name;
    };
    add(__builtin_cpu_supports("avx512f"), "avx512f");
    add(__builtin_cpu_supports("avx512bw"), "avx512bw");
    add(__builtin_cpu_supports("avx512vnni"), "avx512_vnni");
    add(__builtin_cpu_supports("avx512bf16"), "avx512_bf16");
    add(__builtin_cpu_supports("avx2"), "avx2");
    add(__builtin_cpu_supports("fma"), "fma");
    add(has_f16c(), "f16c");
    add(__builtin_cpu_supports("sse4.2"), "sse4.2");
    add(__builtin_cpu_supports("sse2"), "sse2");
    return out.empty() ? "none" : out;
}

}  // namespace swiglu
