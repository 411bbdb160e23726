// The ISA table and which ISAs this CPU and OS can run. Compiled with the
// baseline flags: it only reads CPUID and XCR0.
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

bool always() noexcept { return true; }

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

// Each checks what its ISA's flags (src/CMakeLists.txt) add to its fallback's.
bool sse2() noexcept { return xsimd::available_architectures().sse2; }

bool avx2_fma() noexcept {  // -mavx2 -mfma -mf16c; the OS saves SSE and AVX state
    return xsimd::available_architectures().fma3_avx2 && has_f16c() &&
           (os_saved_state() & 0x6) == 0x6;
}

bool avx512() noexcept {  // -mavx512f -mavx512cd -mavx512dq -mavx512bw; + opmask, ZMM state
    const auto cpu = xsimd::available_architectures();
    return cpu.avx512f && cpu.avx512cd && cpu.avx512dq && cpu.avx512bw &&
           (os_saved_state() & 0xe6) == 0xe6;
}

bool avx512_vnni() noexcept {  // -mavx512vnni: CPUID.(7,0):ECX.AVX512_VNNI
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 11));
}
#else
// Elsewhere only the scalar code runs.
bool never() noexcept { return false; }
constexpr auto sse2 = never, avx2_fma = never, avx512 = never, avx512_vnni = never;
#endif

constexpr IsaInfo kIsaTable[] = {
    {Isa::scalar, "scalar", always, Isa::scalar},
    {Isa::sse2, "sse2", sse2, Isa::scalar},
    {Isa::avx2_fma, "avx2_fma", avx2_fma, Isa::sse2},
    {Isa::avx512, "avx512", avx512, Isa::avx2_fma},
    {Isa::avx512_vnni, "avx512_vnni", avx512_vnni, Isa::avx512},
};
// Row i describes kIsas[i] and falls back to a narrower row: walks down the
// fallbacks end at scalar, and a fallback's availability is known first.
constexpr bool rows_in_order() {
    if (sizeof(kIsaTable) / sizeof(kIsaTable[0]) != kIsaCount) return false;
    for (int i = 0; i < kIsaCount; ++i)
        if (kIsaTable[i].isa != kIsas[i] || (i > 0 && static_cast<int>(kIsaTable[i].fallback) >= i))
            return false;
    return true;
}
static_assert(rows_in_order(), "kIsaTable: one row per ISA, in kIsas' order");

}  // namespace

const IsaInfo& isa_info(Isa isa) noexcept {
    const auto i = static_cast<std::size_t>(isa);
    return kIsaTable[i < std::size_t{kIsaCount} ? i : 0];
}

const char* isa_name(Isa isa) noexcept { return isa_info(isa).name; }

Isa isa_fallback(Isa isa) noexcept { return isa_info(isa).fallback; }

bool isa_available(Isa isa) noexcept {
    static const auto available = [] {
        // Narrower first, so each ISA's fallback is known before it.
        std::array<bool, kIsaCount> a{};
        for (const IsaInfo& info : kIsaTable) {
            const auto fallback = static_cast<std::size_t>(info.fallback);
            a[static_cast<std::size_t>(info.isa)] =
                (info.isa == Isa::scalar || a[fallback]) && info.detect();
        }
        return a;
    }();
    const auto i = static_cast<std::size_t>(isa);
    return i < available.size() && available[i];
}

Isa best_isa() noexcept {
    // kIsas runs from the most portable to the widest.
    Isa best = Isa::scalar;
    for (Isa isa : kIsas)
        if (isa_available(isa)) best = isa;
    return best;
}

}  // namespace swiglu::detail
