#include "atomic_file.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <swiglu/swiglu.hpp>

#include "common/messages.hpp"

namespace swiglu::cli {
namespace {

using detail::invalid;

std::string base_name(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The permissions a plain open(O_CREAT, 0666) would give: mkstemp makes 0600,
// which would surprise whoever reads the output next.
mode_t default_file_mode() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return 0666 & ~mask;
}

}  // namespace

std::string parent_directory(const std::string& path) {
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

namespace {

// Where the bytes of a regular-file output really go: a symbolic link is
// followed, so that the link stays and its target gets the new content (a
// rename over the link would replace it, and a link into /dev, such as
// /dev/stdout, would be replaced for the whole system).
std::string resolve_link(const std::string& path, const std::string& what) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real)
        invalid(what + " " + path +
                ": is a symbolic link that cannot be followed: " + std::strerror(errno));
    std::string out(real);
    std::free(real);
    return out;
}

// A character device or a pipe (/dev/null, /dev/stdout, a FIFO): written in
// place, since there is no file to replace. Block devices and sockets are
// refused: `swiglu run --output /dev/sda` must not write a disk.
bool is_stream(const struct stat& st) { return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode); }

}  // namespace

void check_output_path(const std::string& path, const std::string& what) {
    if (path.empty()) invalid(what + ": the path is empty");
    if (path.back() == '/') invalid(what + " " + path + ": names a directory, not a file");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) invalid(what + " " + path + ": is a directory");
        if (is_stream(st)) {
            if (::access(path.c_str(), W_OK) != 0)
                invalid(what + " " + path + ": cannot write to it: " + std::strerror(errno));
            return;
        }
        if (!S_ISREG(st.st_mode))
            invalid(what + " " + path + ": is " +
                    (S_ISBLK(st.st_mode) ? "a block device" : "a socket") +
                    "; write to a regular file, a character device or a pipe");
    }
    const std::string dir = parent_directory(resolve_link(path, what));
    if (::stat(dir.c_str(), &st) != 0)
        invalid(what + " " + path + ": directory '" + dir + "' " +
                (errno == ENOENT ? std::string("does not exist") : std::strerror(errno)));
    if (!S_ISDIR(st.st_mode)) invalid(what + " " + path + ": '" + dir + "' is not a directory");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        invalid(what + " " + path + ": cannot write in directory '" + dir +
                "': " + std::strerror(errno));
}

AtomicFile::AtomicFile(std::string target) : target_(std::move(target)) {
    struct stat st {};
    if (::stat(target_.c_str(), &st) == 0 && is_stream(st)) {
        fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd_ < 0) invalid("output " + target_ + ": cannot open: " + std::strerror(errno));
        direct_ = true;
        return;
    }
    file_ = resolve_link(target_, "output");
    dir_ = parent_directory(file_);
    // A hidden name in the same directory: rename() is only atomic within one
    // file system, and the dot keeps globs like *.npy from picking it up. The
    // name is cut so that a target near NAME_MAX (255) still gets a temp file.
    std::string pattern =
        (dir_ == "/" ? "" : dir_) + "/." + base_name(file_).substr(0, 200) + ".tmp.XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    fd_ = ::mkstemp(name.data());
    if (fd_ < 0)
        invalid("output " + target_ + ": cannot create a file in '" + dir_ +
                "': " + std::strerror(errno));
    temp_ = name.data();
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what) const {
    invalid("output " + target_ + ": " + what + ": " + std::strerror(errno));
}

void AtomicFile::write(const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = ::write(fd_, p, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("cannot write");
        p += n;
        bytes -= static_cast<std::size_t>(n);
    }
}

void AtomicFile::commit() {
    if (direct_) {
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0) fail("cannot close");
        committed_ = true;
        return;
    }
    if (::fchmod(fd_, default_file_mode()) != 0) fail("cannot set permissions");
    if (::fsync(fd_) != 0) fail("cannot flush to disk");
    const int fd = fd_;
    fd_ = -1;
    // close() can report a deferred write error (NFS): it counts as a failure.
    if (::close(fd) != 0) fail("cannot close");
    if (::rename(temp_.c_str(), file_.c_str()) != 0)
        fail("cannot rename the temporary file over it");
    committed_ = true;
    // The data is safe; make the directory entry durable too. A failure here
    // is not worth failing the command for: the output is already in place.
    const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
}

}  // namespace swiglu::cli
