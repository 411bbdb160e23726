// What a file is when it is not the checkpoint it was given as: the magic
// numbers of the files users mistake for one (a PyTorch .bin, a NumPy .npy
// or .npz, a Git LFS pointer, ...), so that the error names the file's kind
// and how to get a checkpoint from it, not a safetensors header length of
// 7093839458138803024.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace swiglu::detail {

// "a PyTorch checkpoint (...), not safetensors: convert it ..." for the
// file `path` whose first bytes are `head` (`size` of them, the whole file
// or its start); nullopt where the magic is none of those known.
std::optional<std::string> foreign_file_text(const unsigned char* head, std::size_t size,
                                             const std::string& path);

}  // namespace swiglu::detail
