// Which per-ISA kernels this CPU and OS can run. Compiled with the baseline
// flags: it only reads CPUID and XCR0.
#include "kernels/isa.hpp"

#include <array>
#include <cstddef>

#if SWIGLU_X86
#include <cpuid.h>

#include <cstdint>

#include <xsimd/xsimd.hpp>
#endif

namespace swiglu::detail {

namespace {

#if SWIGLU_X86
// XCR0: the register states the OS saves on a context switch. xsimd 8.1's
// available_architectures() reads only the CPUID feature bits, so on an OS or
// VM that leaves AVX/AVX-512 state disabled it would report an ISA whose
// instructions fault. Checking XCR0 as well is what "available" means here.
std::uint64_t os_saved_state() noexcept {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    if (!(ecx & (1u << 27))) return 0;  // no OSXSAVE: xgetbv would fault
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (std::uint64_t{hi} << 32) | lo;
}

// F16C (CPUID.1:ECX bit 29): every AVX2 CPU has it, but xsimd 8.1 doesn't
// report it, and the AVX2 and AVX-512 TUs convert f16 scales with it.
bool has_f16c() noexcept {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));
}

bool detect(Isa isa) noexcept {
    const auto cpu = xsimd::available_architectures();
    const std::uint64_t xcr0 = os_saved_state();
    const bool os_ymm = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
    const bool os_zmm = (xcr0 & 0xe6) == 0xe6;  // + opmask, ZMM0-15 high, ZMM16-31
    switch (isa) {
        case Isa::scalar: return true;
        case Isa::sse2: return cpu.sse2;
        case Isa::avx2_fma: return cpu.fma3_avx2 && has_f16c() && os_ymm;
        // Its TU is also built with -mavx2 -mfma -mf16c, so it needs those too.
        case Isa::avx512:
            return cpu.avx512f && cpu.avx512cd && cpu.avx512dq && cpu.avx512bw && cpu.fma3_avx2 &&
                   has_f16c() && os_ymm && os_zmm;
    }
    return false;
}
#else
bool detect(Isa isa) noexcept { return isa == Isa::scalar; }
#endif

}  // namespace

const char* isa_name(Isa isa) noexcept {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::sse2: return "sse2";
        case Isa::avx2_fma: return "avx2_fma";
        case Isa::avx512: return "avx512";
    }
    return "unknown";
}

bool isa_available(Isa isa) noexcept {
    static const auto available = [] {
        std::array<bool, kIsaCount> a{};
        for (Isa i : kIsas) a[static_cast<std::size_t>(i)] = detect(i);
        return a;
    }();
    const auto i = static_cast<std::size_t>(isa);
    return i < available.size() && available[i];
}

bool avx512_vnni_available() noexcept {
#if SWIGLU_X86
    static const bool vnni = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        return isa_available(Isa::avx512) && __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) &&
               (ecx & (1u << 11));  // CPUID.(7,0):ECX.AVX512_VNNI
    }();
    return vnni;
#else
    return false;
#endif
}

Isa best_isa() noexcept {
    // kIsas runs from the most portable to the widest.
    Isa best = Isa::scalar;
    for (Isa isa : kIsas)
        if (isa_available(isa)) best = isa;
    return best;
}

}  // namespace swiglu::detail
