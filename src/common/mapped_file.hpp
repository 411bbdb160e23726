// A file opened read-only and, when it can be, mapped whole: the one place
// that opens, stats and maps the files the readers take from the user
// (io/safetensors.cpp, cli/npy.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace swiglu::detail {

class MappedFile {
public:
    // Opens `path` read-only and stats it. Throws swiglu::Error
    // (Status::invalid_argument) "PATH: cannot open: REASON" or
    // "PATH: cannot stat: REASON". Like open(2), it waits for a writer when
    // `path` is a FIFO.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    bool is_regular() const { return regular_; }
    bool is_directory() const { return directory_; }
    // The size fstat reported; only a regular file's means anything.
    std::size_t size() const { return size_; }

    // Maps the whole file read-only; needs a regular file of size() > 0
    // (mmap refuses length 0). On success the descriptor is closed (the
    // mapping does not need it, and a reader holding many files should not
    // hold a descriptor each). Returns false, with errno set by mmap, if the
    // file cannot be mapped; the descriptor then stays open for fd().
    bool map();
    bool mapped() const { return data_ != nullptr; }
    // The mapped bytes; nullptr and empty until map() succeeds.
    const unsigned char* data() const { return data_; }
    std::string_view bytes() const {
        return {reinterpret_cast<const char*>(data_), data_ ? size_ : 0};
    }

    // The open descriptor, for reading what cannot be mapped; -1 once mapped.
    int fd() const { return fd_; }

private:
    int fd_ = -1;
    bool regular_ = false;
    bool directory_ = false;
    std::size_t size_ = 0;
    const unsigned char* data_ = nullptr;
};

// A regular file mapped whole and read-only, for the checkpoint readers:
// the bytes live as long as any copy of `bytes` (nullptr for an empty
// file). Throws swiglu::Error as MappedFile does, and "PATH: not a regular
// file" / "PATH: cannot mmap: REASON".
struct WholeFile {
    std::shared_ptr<const unsigned char> bytes;
    std::size_t size = 0;
};
WholeFile map_whole_file(const std::string& path);

}  // namespace swiglu::detail
