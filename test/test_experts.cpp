// swiglu::Experts against a float64 reference.
#include <doctest/doctest.h>

#include "swiglu/moe.hpp"
