#include "trace_output.hpp"

#include <cerrno>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.hpp"
#include "common/messages.hpp"
#include "npy_output.hpp"

namespace swiglu::cli {
namespace {

using detail::invalid;

std::string without_trailing_slashes(std::string dir) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir;
}

}  // namespace

void check_trace_dir(const std::string& raw) {
    if (raw.empty()) invalid("--trace: the directory name is empty");
    const std::string dir = without_trailing_slashes(raw);
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            invalid("trace directory " + dir + ": exists and is not a directory");
        if (::access(dir.c_str(), W_OK | X_OK) != 0)
            invalid("trace directory " + dir + ": cannot write in it: " + std::strerror(errno));
        return;
    }
    if (errno != ENOENT) invalid("trace directory " + dir + ": " + std::strerror(errno));
    // It will be created: the parent must be there (we create one level only,
    // so that a typo does not grow a tree of directories).
    const std::string parent = parent_directory(dir);
    if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        invalid("trace directory " + dir + ": parent directory '" + parent + "' does not exist");
}

void write_trace(const std::string& raw, const std::vector<std::int64_t>& leading, std::int64_t d,
                 std::int64_t f, const Trace& trace) {
    const std::string dir = without_trailing_slashes(raw);
    if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
        invalid("trace directory " + dir + ": cannot create it: " + std::strerror(errno));
    auto shape_with = [&](std::int64_t last) {
        std::vector<std::int64_t> shape = leading;
        shape.push_back(last);
        return shape;
    };
    write_npy_file(dir + "/gate.npy", trace.gate.data(), shape_with(f));
    write_npy_file(dir + "/up.npy", trace.up.data(), shape_with(f));
    write_npy_file(dir + "/act.npy", trace.act.data(), shape_with(f));
    write_npy_file(dir + "/down.npy", trace.down.data(), shape_with(d));
}

}  // namespace swiglu::cli
