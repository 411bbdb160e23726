// MoE routers (swiglu/moe.hpp): route().
#include "swiglu/moe.hpp"
