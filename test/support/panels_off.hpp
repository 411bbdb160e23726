// Runs f32 and bf16 without the panels mode for one scope (core/precision.hpp):
// on a CPU without AVX-512 they would take it, and the modes it replaces
// there (oneDNN's f32 kernels, bf16 emulated) must stay tested too.
#pragma once

#include "core/precision.hpp"

namespace swiglu::test {

struct PanelsOff {
    PanelsOff() { detail::set_panels(false); }
    ~PanelsOff() { detail::set_panels(true); }
    PanelsOff(const PanelsOff&) = delete;
    PanelsOff& operator=(const PanelsOff&) = delete;
};

}  // namespace swiglu::test
