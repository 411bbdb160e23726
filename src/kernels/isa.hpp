// The instruction sets the per-ISA kernels are built for, and which of them
// this CPU and OS can run. Each kernel family registers its per-ISA entry
// points once (isa_dispatch.hpp) and runs the best one this CPU has.
#pragma once

// The per-ISA kernels exist on x86 builds only; elsewhere the scalar code runs.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#define SWIGLU_X86 1
#else
#define SWIGLU_X86 0
#endif

namespace swiglu::detail {

// The one list of ISAs, each wider than the one before it. Adding an ISA: an
// entry here and in kIsas, its row in isa.cpp's table (name, detection of
// what its compile flags require, fallback), its flags in src/CMakeLists.txt
// (swiglu_isa_flags_<isa>), then the ISA in the families that get kernels for
// it: their swiglu_isa_family(... ISAS) and registration lists.
enum class Isa { scalar, sse2, avx2_fma, avx512, avx512_vnni };
inline constexpr Isa kIsas[] = {Isa::scalar, Isa::sse2, Isa::avx2_fma, Isa::avx512,
                                Isa::avx512_vnni};
inline constexpr int kIsaCount = sizeof(kIsas) / sizeof(kIsas[0]);

// One ISA: its name, whether this CPU and OS run what its TUs' flags allow
// the compiler to emit (beyond its fallback's: detect runs only once the
// fallback is available), and the narrower ISA whose kernels a family falls
// back to where it has none for this one (scalar's is itself).
struct IsaInfo {
    Isa isa;
    const char* name;
    bool (*detect)() noexcept;
    Isa fallback;
};

const IsaInfo& isa_info(Isa isa) noexcept;
const char* isa_name(Isa isa) noexcept;
Isa isa_fallback(Isa isa) noexcept;

// The CPU has the instructions and the OS saves their registers (and so
// runs every ISA along its fallbacks).
bool isa_available(Isa isa) noexcept;

// The widest ISA this CPU runs.
Isa best_isa() noexcept;

}  // namespace swiglu::detail
