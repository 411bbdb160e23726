// The instruction sets the per-ISA kernels (SiLU*up, the conversions) are
// built for, and which of them this CPU and OS can run.
#pragma once

// The per-ISA kernels exist on x86 builds only; elsewhere the scalar code runs.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#define SWIGLU_X86 1
#else
#define SWIGLU_X86 0
#endif

namespace swiglu::detail {

// The one list of ISAs: the kernel tables (kernel_table.hpp), the tests and
// the benchmarks all iterate kIsas. Adding an ISA: an entry here and in kIsas,
// its name and detection (isa.cpp), its two TUs (f32_silu_mul_<isa>.cpp,
// convert_<isa>.cpp, the latter defining kernel_table_<isa>()), its entry in
// kernel_table.cpp and its flags in src/CMakeLists.txt.
enum class Isa { scalar, sse2, avx2_fma, avx512 };
inline constexpr Isa kIsas[] = {Isa::scalar, Isa::sse2, Isa::avx2_fma, Isa::avx512};
inline constexpr int kIsaCount = sizeof(kIsas) / sizeof(kIsas[0]);

const char* isa_name(Isa isa) noexcept;

// The CPU has the instructions and the OS saves their registers.
bool isa_available(Isa isa) noexcept;

// The best ISA this CPU runs among those this build has kernels for.
Isa best_isa() noexcept;

// AVX-512 is available and has VNNI (vpdpbusd), which the grouped kernels'
// AVX-512 TU needs beyond the ISA's base set.
bool avx512_vnni_available() noexcept;

}  // namespace swiglu::detail
