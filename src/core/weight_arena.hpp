// One block of memory for all packed weights, asking the kernel for
// transparent huge pages: decode streams every weight once per token, and
// with 4 KiB pages TLB misses cost a large part of that stream
// (docs/measurements.md).
#pragma once

#include <cstddef>

namespace swiglu::detail {

class WeightArena {
public:
    WeightArena() = default;
    explicit WeightArena(std::size_t bytes);  // zeroed; throws Error(out_of_memory)
    ~WeightArena();
    WeightArena(WeightArena&& other) noexcept;
    WeightArena& operator=(WeightArena&& other) noexcept;
    WeightArena(const WeightArena&) = delete;
    WeightArena& operator=(const WeightArena&) = delete;

    unsigned char* data() const { return data_; }
    std::size_t size() const { return size_; }

private:
    void* mapping_ = nullptr;  // what mmap returned (data_ is aligned inside it)
    std::size_t mapped_ = 0;
    unsigned char* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace swiglu::detail
