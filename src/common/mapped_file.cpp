#include "common/mapped_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/messages.hpp"

namespace swiglu::detail {

MappedFile::MappedFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) invalid(one_line(path) + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
        // No destructor runs for a constructor that throws: close here.
        const std::string message = one_line(path) + ": cannot stat: " + std::strerror(errno);
        ::close(fd_);
        invalid(message);
    }
    regular_ = S_ISREG(st.st_mode);
    directory_ = S_ISDIR(st.st_mode);
    size_ = static_cast<std::size_t>(st.st_size);
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
}

bool MappedFile::map() {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<const unsigned char*>(p);
    ::close(fd_);
    fd_ = -1;
    return true;
}

WholeFile map_whole_file(const std::string& path) {
    const auto mapped = std::make_shared<MappedFile>(path);
    if (!mapped->is_regular()) invalid(one_line(path) + ": not a regular file");
    WholeFile file;
    file.size = mapped->size();
    if (file.size > 0) {  // mmap refuses length 0; the readers report the short file
        if (!mapped->map()) invalid(one_line(path) + ": cannot mmap: " + std::strerror(errno));
        // The bytes keep the mapping alive, in every copy of the pointer.
        file.bytes = std::shared_ptr<const unsigned char>(mapped, mapped->data());
    }
    return file;
}

}  // namespace swiglu::detail
