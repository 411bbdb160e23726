// route() (swiglu/moe.hpp) against a float64 reference of each family's rule.
#include <doctest/doctest.h>

#include "swiglu/moe.hpp"
