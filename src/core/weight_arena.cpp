#include "core/weight_arena.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <string>
#include <utility>

#include <swiglu/swiglu.hpp>

namespace swiglu::detail {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

WeightArena::WeightArena(std::size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    if (bytes > SIZE_MAX - 2 * kHugePage)
        throw Error(Status::out_of_memory, "packed weights: size overflows");
    // Over-map by one huge page so the start can be 2 MiB aligned: the kernel
    // only backs aligned 2 MiB ranges with huge pages.
    mapped_ = (bytes + kHugePage - 1) / kHugePage * kHugePage + kHugePage;
    mapping_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping_ == MAP_FAILED) {
        mapping_ = nullptr;
        throw Error(Status::out_of_memory,
                    "cannot allocate " + std::to_string(bytes) + " bytes for the packed weights");
    }
    const auto start = reinterpret_cast<std::uintptr_t>(mapping_);
    data_ = reinterpret_cast<unsigned char*>((start + kHugePage - 1) / kHugePage * kHugePage);
    // Advice only: where THP is off this fails harmlessly and 4 KiB pages serve.
    madvise(data_,
            mapped_ - static_cast<std::size_t>(data_ - static_cast<unsigned char*>(mapping_)),
            MADV_HUGEPAGE);
}

WeightArena::~WeightArena() {
    if (mapping_) munmap(mapping_, mapped_);
}

WeightArena::WeightArena(WeightArena&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      mapped_(std::exchange(other.mapped_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

WeightArena& WeightArena::operator=(WeightArena&& other) noexcept {
    if (this != &other) {
        if (mapping_) munmap(mapping_, mapped_);
        mapping_ = std::exchange(other.mapping_, nullptr);
        mapped_ = std::exchange(other.mapped_, 0);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

}  // namespace swiglu::detail
