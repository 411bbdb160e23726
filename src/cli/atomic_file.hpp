// Writing a file so that readers see either the old content or the complete
// new content, never a mix: the bytes go to a temporary file in the target's
// directory, which is fsync'd and then renamed over the target. A target that
// is a symbolic link is followed (the link stays); one that is a character
// device or a pipe (/dev/null, /dev/stdout, a FIFO) is written in place.
#pragma once

#include <cstddef>
#include <string>

namespace swiglu::cli {

class AtomicFile {
public:
    // Creates the temporary file next to `target` (mkstemp). Throws
    // swiglu::Error(invalid_argument) naming `target` when it cannot.
    explicit AtomicFile(std::string target);
    // Removes the temporary file unless commit() succeeded.
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, std::size_t bytes);
    // fsync, rename over the target, fsync the directory (so the rename
    // itself survives a crash). After this the temporary file is gone.
    void commit();

    const std::string& temp_path() const { return temp_; }

private:
    [[noreturn]] void fail(const std::string& what) const;

    std::string target_;  // as given
    std::string file_;    // the regular file written: target_ with links followed
    std::string dir_, temp_;
    int fd_ = -1;
    bool direct_ = false;  // a device or a pipe: no temporary file, no rename
    bool committed_ = false;
};

// The directory part of `path` ("." when it has none).
std::string parent_directory(const std::string& path);

// Cheap checks before any expensive work, so that a bad output path is
// reported in a second rather than after loading a large checkpoint: the
// directory exists and is writable, and the target is not a directory (nor
// a block device or a socket); a character device or a pipe must be writable.
// `what` names the argument in messages ("output", "trace directory").
void check_output_path(const std::string& path, const std::string& what);

}  // namespace swiglu::cli
