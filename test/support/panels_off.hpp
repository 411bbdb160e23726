// Options that run f32 and bf16 without the panels engine (BuildPolicy): on
// a CPU without AVX-512 they would take it, and the modes it replaces there
// (oneDNN's f32 kernels, bf16 emulated) must stay tested too.
#pragma once

#include <swiglu/swiglu.hpp>

namespace swiglu::test {

inline Options panels_off(Options options) {
    options.build.panels = false;
    return options;
}

}  // namespace swiglu::test
