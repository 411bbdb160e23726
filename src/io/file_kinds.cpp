#include "io/file_kinds.hpp"

#include <cstring>
#include <string_view>

namespace swiglu::detail {

namespace {

bool starts_with(std::string_view bytes, std::string_view magic) {
    return bytes.substr(0, magic.size()) == magic;
}

bool ends_with(std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// The name of a zip archive's first entry (its local file header: the
// name's length at offset 26, the name at 30), or "" when cut off.
std::string_view first_zip_entry(std::string_view bytes) {
    if (bytes.size() < 30) return {};
    const std::size_t length = static_cast<unsigned char>(bytes[26]) |
                               static_cast<std::size_t>(static_cast<unsigned char>(bytes[27])) << 8;
    if (bytes.size() < 30 + length) return {};
    return bytes.substr(30, length);
}

// How to get safetensors from a PyTorch checkpoint, in Python.
std::string convert_torch(const std::string& path) {
    return "convert it to safetensors in Python: from safetensors.torch import save_file; "
           "save_file(torch.load(\"" +
           path +
           "\", map_location=\"cpu\"), \"model.safetensors\") (or pass the model's "
           ".safetensors or a GGUF file)";
}

}  // namespace

std::optional<std::string> foreign_file_text(const unsigned char* head, std::size_t size,
                                             const std::string& path) {
    const std::string_view bytes(reinterpret_cast<const char*>(head), head ? size : 0);
    if (starts_with(bytes, std::string_view("PK\x03\x04", 4))) {
        // torch.save (since PyTorch 1.6) and numpy.savez both write zip
        // archives: torch's entries are ARCHIVE/data.pkl, ARCHIVE/data/N, ...;
        // savez's are one NAME.npy per array.
        const std::string_view entry = first_zip_entry(bytes);
        if (ends_with(entry, ".npy"))
            return std::string(
                "a NumPy .npz archive, not safetensors: save its arrays as safetensors in "
                "Python: from safetensors.numpy import save_file; "
                "save_file(dict(numpy.load(\"" +
                path + "\")), \"model.safetensors\")");
        if (ends_with(entry, "data.pkl") || entry.find('/') != std::string_view::npos)
            return "a PyTorch checkpoint (torch.save's zip archive, e.g. pytorch_model.bin), not "
                   "safetensors: " +
                   convert_torch(path);
        return std::string("a zip archive, not safetensors or GGUF");
    }
    // A pickle (protocol 2 to 5 starts with PROTO n): torch.save's format
    // before 1.6, still what _use_new_zipfile_serialization=False writes.
    if (bytes.size() >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
        return "a Python pickle (a PyTorch checkpoint in torch.save's legacy format), not "
               "safetensors: " +
               convert_torch(path);
    if (starts_with(bytes, "\x93NUMPY"))
        return std::string(
            "a NumPy .npy array, not a checkpoint (an input x is given as .npy; weights as a "
            "safetensors or GGUF file: save the three weights by name with "
            "safetensors.numpy.save_file)");
    if (starts_with(bytes, "GGUF"))
        return std::string(
            "a GGUF file, not safetensors: open it as GGUF (by a path, which is "
            "read as GGUF by its magic)");
    if (starts_with(bytes, "version https://git-lfs"))
        return std::string(
            "a Git LFS pointer, not the weights: fetch them (git lfs install; git lfs pull) or "
            "download the file itself");
    if (starts_with(bytes, "\x89HDF\r\n\x1a\n"))
        return std::string("an HDF5 file (Keras / TensorFlow .h5), not safetensors or GGUF");
    return std::nullopt;
}

}  // namespace swiglu::detail
