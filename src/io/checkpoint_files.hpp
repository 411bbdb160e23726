// A checkpoint's tensors, in one safetensors file, one GGUF file, or in the
// shards a Hugging Face index names (model.safetensors.index.json: {"metadata": {...},
// "weight_map": {tensor name: shard file name}}), behind one lookup by
// name. Discovery needs only the names, which a sharded checkpoint's index
// holds: a shard is mapped only when a tensor of it is looked up, so loading
// one block maps only the shards that hold it.
//
// The index is read as distrustfully as a safetensors header: at most
// 100 MB, strict JSON (a tensor mapped twice is an error, not "the last
// wins"), weight_map an object of strings, every shard a plain file name in
// the index's folder (no '/', no "..", no NUL). A shard must be a valid
// safetensors file and hold the tensors the index maps to it; its errors
// name it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.hpp"
#include "io/safetensors.hpp"
#include "io/stored_tensor.hpp"

namespace swiglu::detail {

class CheckpointFiles {
public:
    // `path` is a GGUF file (by its magic), a safetensors file, an index (a
    // name ending in .json), or a folder that holds
    // model.safetensors.index.json or model.safetensors.
    static CheckpointFiles open(const std::string& path);
    // Whether open(path) reads it as a GGUF file (by its name or magic); a
    // missing or unreadable path is none (open says why).
    static bool is_gguf(const std::string& path);
    // One file already open (from disk or memory).
    static CheckpointFiles single(SafetensorsFile file);
    static CheckpointFiles single(GgufFile file);
    // An index's text, its shards looked up in `folder`; `label` names the
    // index in messages.
    static CheckpointFiles from_index(std::string_view text, const std::string& folder,
                                      std::string label);
    // Moves only: names() views the keys this object owns.
    CheckpointFiles(CheckpointFiles&&) = default;
    CheckpointFiles& operator=(CheckpointFiles&&) = default;
    CheckpointFiles(const CheckpointFiles&) = delete;
    CheckpointFiles& operator=(const CheckpointFiles&) = delete;

    const std::string& label() const { return label_; }
    bool sharded() const { return sharded_; }
    // The folder the checkpoint was opened from (a file's, an index's, or
    // the folder named), where a model's config.json sits beside its
    // weights; "" for a file from memory.
    const std::string& folder() const { return folder_; }
    // The GGUF file, or nullptr for safetensors (its metadata: a Mixture-
    // of-Experts layer's routing rule).
    const GgufFile* gguf() const { return gguf_.get(); }
    // Every tensor name: the file's in file order, or the index's (sorted).
    const std::vector<std::string_view>& names() const { return names_; }
    bool has(std::string_view name) const { return shard_of_.count(name) != 0; }
    // The tensor, its shard mapped on first use; empty if no such name.
    // Throws swiglu::Error for a shard that is missing or malformed or does
    // not hold the tensor.
    std::optional<StoredTensor> find(std::string_view name) const;
    std::vector<float> to_f32(const StoredTensor& t) const { return decode_to_f32(t, label_); }
    // "tensors present (N): ..." for messages: names, shapes and types of
    // a few (a sharded checkpoint's: names, without mapping shards), those
    // nearest `near` (what was asked for) first, the rest counted.
    std::string tensors_text(std::string_view near = {}) const;
    std::size_t shards() const { return shard_names_.size(); }
    std::size_t shards_mapped() const;

private:
    CheckpointFiles() = default;

    std::string label_;
    std::string folder_;
    bool sharded_ = false;
    std::vector<std::string> shard_names_;
    // name -> its shard; the keys are what names_ views.
    std::map<std::string, std::size_t, std::less<>> shard_of_;
    std::vector<std::string_view> names_;
    // Mapped on first use (a sharded checkpoint's shards); shared so that
    // what find() returns stays valid as long as any owner lives.
    std::shared_ptr<std::vector<std::optional<SafetensorsFile>>> files_;
    std::shared_ptr<const GgufFile> gguf_;  // or one GGUF file
};

}  // namespace swiglu::detail
