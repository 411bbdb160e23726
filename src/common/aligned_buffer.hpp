// An uninitialised, 64-byte aligned array: scratch that is never zero-filled
// up front (pages are touched only where used).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include <swiglu/swiglu.hpp>

namespace swiglu::detail {

template <class T>
class AlignedBuffer {
public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(std::size_t count) : size_(count) {
        if (count == 0) return;
        const std::size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
        if (count > (SIZE_MAX - 63) / sizeof(T))
            throw Error(Status::out_of_memory, "scratch buffer size overflows");
        data_.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
        if (!data_)
            throw Error(Status::out_of_memory,
                        "cannot allocate " + std::to_string(bytes) + " bytes of scratch");
    }
    T* data() const { return data_.get(); }
    std::size_t size() const { return size_; }

private:
    struct Free {
        void operator()(T* p) const { std::free(p); }
    };
    std::unique_ptr<T, Free> data_;
    std::size_t size_ = 0;
};

}  // namespace swiglu::detail
