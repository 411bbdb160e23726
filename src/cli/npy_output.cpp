#include "npy_output.hpp"

#include "atomic_file.hpp"
#include "cli/npy.hpp"

namespace swiglu::cli {

void write_npy_file(const std::string& path, const float* data,
                    const std::vector<std::int64_t>& shape) {
    std::int64_t elements = 1;
    for (std::int64_t n : shape) elements *= n;  // the shape of an array we hold: no overflow
    // The header, then the data straight from the caller's buffer: the
    // output is not copied again in memory.
    const std::string preamble = detail::npy_preamble(detail::npy_header_dict(shape));
    AtomicFile file(path);
    file.write(preamble.data(), preamble.size());
    file.write(data, static_cast<std::size_t>(elements) * sizeof(float));
    file.commit();
}

}  // namespace swiglu::cli
