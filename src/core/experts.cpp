// Routed experts (swiglu/moe.hpp): Experts.
#include "swiglu/moe.hpp"
