// The library's version string, set by CMake.
#include <swiglu/swiglu.hpp>

namespace swiglu {

const char* version() noexcept { return SWIGLU_VERSION_STRING; }

}  // namespace swiglu
