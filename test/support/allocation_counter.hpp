// Allocation counters for the hot-path tests: a test binary that links
// allocation_counter.cpp has the global operator new (both forms) and
// aligned_alloc (the library's AlignedBuffer) replaced by counting ones.
#pragma once

namespace swiglu::test {

long operator_news();   // operator new calls so far, this process
long aligned_allocs();  // aligned_alloc calls so far, this process

}  // namespace swiglu::test
