// The allocation counters (allocation_counter.hpp): replaces the global
// operator new and aligned_alloc for the whole test binary that links this
// file (and the libraries it calls), counting only.
#include "allocation_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> g_news{0}, g_aligned{0};
}

// Replaces the global operator new for the whole test binary (and the oneDNN
// it calls): counting only.
void* operator new(std::size_t n) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The nothrow pair too (std::stable_sort's buffer: get_temporary_buffer
// allocates with it and frees with the sized delete above). Left to the
// runtime, under AddressSanitizer its new came from ASan's allocator and
// went back through free(): an alloc-dealloc mismatch.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    g_news.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(n ? n : 1);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

// And aligned_alloc, where the library's scratch comes from (AlignedBuffer):
// counted, then served by posix_memalign (aligned_alloc's contract is the
// same, with an alignment of at least a pointer's).
extern "C" void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
    g_aligned.fetch_add(1, std::memory_order_relaxed);
    void* p = nullptr;
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

namespace swiglu::test {

long operator_news() { return g_news.load(); }
long aligned_allocs() { return g_aligned.load(); }

}  // namespace swiglu::test
