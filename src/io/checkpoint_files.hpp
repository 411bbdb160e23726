// A checkpoint's tensors, in one safetensors file or in the shards a Hugging
// Face index names (model.safetensors.index.json: {"metadata": {...},
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

#include "io/safetensors.hpp"

namespace swiglu::detail {

// A tensor and the file that holds it; empty when there is no such name.
struct TensorRef {
    const SafetensorsFile* file = nullptr;
    const TensorInfo* info = nullptr;
    explicit operator bool() const { return info != nullptr; }
    const TensorInfo& operator*() const { return *info; }
    const TensorInfo* operator->() const { return info; }
};

class CheckpointFiles {
public:
    // `path` is a safetensors file, an index (a name ending in .json), or a
    // folder that holds model.safetensors.index.json or model.safetensors.
    static CheckpointFiles open(const std::string& path);
    // One file already open (from disk or memory).
    static CheckpointFiles single(SafetensorsFile file);
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
    // Every tensor name: the file's in file order, or the index's (sorted).
    const std::vector<std::string_view>& names() const { return names_; }
    bool has(std::string_view name) const { return shard_of_.count(name) != 0; }
    // The tensor, its shard mapped on first use; empty if no such name.
    // Throws swiglu::Error for a shard that is missing or malformed or does
    // not hold the tensor.
    TensorRef find(std::string_view name) const;
    std::vector<float> to_f32(TensorRef t) const { return t.file->to_f32(*t.info); }
    // "tensors present (N): ..." for messages: names, shapes and dtypes of
    // the first 20 (a sharded checkpoint's: names, without mapping shards).
    std::string tensors_text() const;
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
    // Mapped on first use; shared so that copies share the mappings.
    std::shared_ptr<std::vector<std::optional<SafetensorsFile>>> files_;
};

}  // namespace swiglu::detail
