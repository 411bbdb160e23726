// The instruction sets the per-ISA kernels (SiLU*up, the conversions) are
// built for, and which of them this CPU and OS can run.
#pragma once

// The per-ISA kernels exist on x86 builds only; elsewhere the scalar code runs.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#define SWIGLU_ACT_X86 1
#else
#define SWIGLU_ACT_X86 0
#endif

namespace swiglu::detail {

enum class ActIsa { scalar, sse2, avx2_fma, avx512 };

const char* act_isa_name(ActIsa isa) noexcept;

// The CPU has the instructions and the OS saves their registers.
bool act_isa_available(ActIsa isa) noexcept;

// The best ISA this CPU runs among those this build has kernels for.
ActIsa best_act_isa() noexcept;

}  // namespace swiglu::detail
