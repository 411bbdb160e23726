// Picks the activation kernel for this CPU, once. Compiled with the baseline
// flags: it only hands out pointers to the per-ISA TUs.
#include "activation/silu_mul.hpp"

namespace swiglu::detail {

namespace {

struct Choice {
  ActIsa isa;
  SiluMulFn fn;
};

// Resolved once (thread-safe function-local static) so that silu_mul is a
// guard check plus one indirect call, not a walk over the ISAs per call.
const Choice& choice() noexcept {
  static const Choice chosen = [] {
    const ActIsa isa = best_act_isa();
    return Choice{isa, silu_mul_kernel(isa)};
  }();
  return chosen;
}

}  // namespace

SiluMulFn silu_mul_kernel(ActIsa isa) noexcept {
  switch (isa) {
    case ActIsa::scalar: return &silu_mul_scalar;
#if SWIGLU_ACT_X86
    case ActIsa::sse2: return &silu_mul_sse2;
    case ActIsa::avx2_fma: return &silu_mul_avx2_fma;
    case ActIsa::avx512: return &silu_mul_avx512;
#else
    default: return nullptr;
#endif
  }
  return nullptr;
}

void silu_mul(const float* gate, const float* up, float* out, std::size_t n) noexcept {
  choice().fn(gate, up, out, n);
}

const char* silu_mul_isa_name() noexcept { return act_isa_name(choice().isa); }

}  // namespace swiglu::detail
