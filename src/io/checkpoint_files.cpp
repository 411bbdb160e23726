#include "io/checkpoint_files.hpp"

#include <sys/stat.h>

#include <cstring>
#include <fstream>

#include <swiglu/swiglu.hpp>

#include "common/mapped_file.hpp"
#include "common/messages.hpp"
#include "io/strict_json.hpp"

namespace swiglu::detail {

namespace {

using json = nlohmann::json;

// As for a safetensors header: an index is a few hundred KB in practice.
constexpr std::size_t kMaxIndexBytes = 100u * 1000 * 1000;
// {"weight_map": {name: file}} nests 2 deep; metadata may add a level.
constexpr int kMaxIndexNesting = 8;
// Tensors a message lists (with shapes, ~60 bytes each), nearest what was
// asked for first; the rest are counted.
constexpr std::size_t kListedTensors = 8;
const char* const kIndexName = "model.safetensors.index.json";
const char* const kSingleName = "model.safetensors";

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}
bool ends_with(const std::string& s, const char* tail) {
    const std::size_t n = std::strlen(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// Whether the file at `path` starts with GGUF's magic.
bool gguf_magic(const std::string& path) {
    char head[4] = {};
    std::ifstream in(path, std::ios::binary);
    in.read(head, sizeof head);
    return in.gcount() == 4 && GgufFile::has_magic(std::string_view(head, 4));
}

StoredTensor stored(const SafetensorsFile& file, const TensorInfo& t) {
    StoredTensor s;
    s.name = t.name;
    s.type_name = dtype_name(t.dtype);
    s.shape = t.shape;
    s.elements = t.elements;
    s.format = format_by_safetensors(s.type_name);
    if (!s.format) return s;
    s.data = file.tensor_data(t);
    s.bytes = t.bytes;
    return s;
}

StoredTensor stored(const GgufFile& file, const GgufTensor& t) {
    StoredTensor s;
    s.name = t.name;
    s.type_name = ggml_type_name(t.type);
    s.shape = t.shape;
    s.elements = t.elements;
    s.format = format_by_gguf_type(t.type);
    if (!s.format) return s;
    s.data = file.tensor_data(t);
    s.bytes = t.bytes;
    return s;
}

// A shard must be a file in the index's folder, named plainly.
bool plain_file_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.size() <= 255 &&
           name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

CheckpointFiles CheckpointFiles::single(SafetensorsFile file) {
    CheckpointFiles c;
    c.label_ = file.label();
    c.shard_names_ = {file.label()};
    c.files_ = std::make_shared<std::vector<std::optional<SafetensorsFile>>>(1);
    (*c.files_)[0].emplace(std::move(file));
    for (const TensorInfo& t : (*c.files_)[0]->tensors()) {
        c.shard_of_.emplace(t.name, 0);
        c.names_.push_back(t.name);  // views the file's own names, in file order
    }
    return c;
}

CheckpointFiles CheckpointFiles::single(GgufFile file) {
    CheckpointFiles c;
    c.label_ = file.label();
    c.shard_names_ = {file.label()};
    c.gguf_ = std::make_shared<const GgufFile>(std::move(file));
    c.files_ = std::make_shared<std::vector<std::optional<SafetensorsFile>>>();
    for (const GgufTensor& t : c.gguf_->tensors()) {
        c.shard_of_.emplace(t.name, 0);
        c.names_.push_back(t.name);
    }
    return c;
}

CheckpointFiles CheckpointFiles::from_index(std::string_view text, const std::string& folder,
                                            std::string label) {
    label = one_line(label);
    auto fail = [&label](const std::string& what) { invalid(label + ": " + what); };
    if (text.empty()) fail("index is empty; expected a JSON object with a weight_map");
    if (text.size() > kMaxIndexBytes)
        fail("index is " + std::to_string(text.size()) + " bytes, over the limit of " +
             std::to_string(kMaxIndexBytes) + " (100 MB)");
    // nlohmann would stop at a NUL as if the text ended there.
    if (const void* nul = std::memchr(text.data(), '\0', text.size()))
        fail("index contains a NUL byte at offset " +
             std::to_string(static_cast<const char*>(nul) - text.data()));
    const StrictJsonRules rules{
        "index", kMaxIndexNesting, "a valid index nests 2 or 3 deep",
        [](const std::string& key, const std::string& inside) {
            if (inside == "weight_map")
                return "tensor " + quote_name(key) + " is mapped twice in weight_map";
            return inside.empty()
                       ? "duplicate key " + quote_name(key) + " in the index"
                       : "duplicate key " + quote_name(key) + " inside " + quote_name(inside);
        }};
    const json root = parse_strict_json(text, rules, fail);
    if (!root.is_object())
        fail(std::string("index must be a JSON object, found ") + root.type_name());
    const auto map = root.find("weight_map");
    if (map == root.end()) fail("index has no weight_map (tensor name -> shard file)");
    if (!map->is_object())
        fail(std::string("weight_map must be an object, found ") + map->type_name());

    CheckpointFiles c;
    c.label_ = label;
    c.folder_ = folder;
    c.sharded_ = true;
    std::map<std::string, std::size_t> shard_index;
    for (auto it = map->begin(); it != map->end(); ++it) {
        if (!it->is_string())
            fail("weight_map maps tensor " + quote_name(it.key()) + " to a " + it->type_name() +
                 "; expected a shard's file name");
        const std::string& shard = it->get_ref<const std::string&>();
        if (!plain_file_name(shard))
            fail("weight_map maps tensor " + quote_name(it.key()) + " to " + quote_name(shard) +
                 ", which is not a file name in the index's folder");
        const auto [at, added] = shard_index.emplace(shard, c.shard_names_.size());
        if (added) c.shard_names_.push_back(shard);
        c.shard_of_.emplace(it.key(), at->second);
    }
    for (const auto& entry : c.shard_of_) c.names_.push_back(entry.first);
    c.files_ = std::make_shared<std::vector<std::optional<SafetensorsFile>>>(c.shard_names_.size());
    return c;
}

bool CheckpointFiles::is_gguf(const std::string& path) {
    return !is_directory(path) && (ends_with(path, ".gguf") || gguf_magic(path));
}

CheckpointFiles CheckpointFiles::open(const std::string& path) {
    const std::string shown = one_line(path);
    if (is_directory(path)) {
        const std::string index = path + "/" + kIndexName, single_file = path + "/" + kSingleName;
        if (exists(index)) return open(index);
        if (exists(single_file)) return open(single_file);
        invalid(shown + ": a folder with neither " + kIndexName + " nor " + kSingleName);
    }
    const std::size_t slash = path.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    const auto in_folder = [&folder](CheckpointFiles c) {
        c.folder_ = folder;
        return c;
    };
    if (ends_with(path, ".gguf") || gguf_magic(path))
        return in_folder(single(GgufFile::open(path)));
    if (!ends_with(path, ".json")) return in_folder(single(SafetensorsFile::open(path)));
    MappedFile file(path);
    if (!file.is_regular()) invalid(shown + ": not a regular file");
    if (file.size() > kMaxIndexBytes)
        invalid(shown + ": index is " + std::to_string(file.size()) + " bytes, over the limit of " +
                std::to_string(kMaxIndexBytes) + " (100 MB)");
    if (file.size() > 0 && !file.map()) invalid(shown + ": cannot mmap: " + std::strerror(errno));
    return from_index(file.bytes(), folder.empty() ? "/" : folder, path);
}

std::optional<StoredTensor> CheckpointFiles::find(std::string_view name) const {
    const auto it = shard_of_.find(name);
    if (it == shard_of_.end()) return {};
    if (gguf_) return stored(*gguf_, *gguf_->find(name));
    std::optional<SafetensorsFile>& file = (*files_)[it->second];
    const std::string& shard = shard_names_[it->second];
    if (!file) {
        const std::string path = folder_ + (ends_with(folder_, "/") ? "" : "/") + shard;
        try {
            file.emplace(SafetensorsFile::open(path));
        } catch (const Error& e) {
            throw Error(e.status(), label_ + ": shard " + quote_name(shard) + " (of tensor " +
                                        quote_name(name) + "): " + e.what());
        }
    }
    const TensorInfo* info = file->find(name);
    if (!info)
        invalid(label_ + ": weight_map maps tensor " + quote_name(name) + " to shard " +
                quote_name(shard) + ", which does not hold it");
    return stored(*file, *info);
}

std::string CheckpointFiles::tensors_text(std::string_view near) const {
    std::string s = "tensors present (" + std::to_string(names_.size()) +
                    (sharded_ ? ", in " + std::to_string(shards()) + " shards" : "") + ")";
    if (names_.empty()) return s + ": none";
    const std::vector<std::string_view> shown = closest_first(names_, near);
    s += near.empty() ? ":" : ", nearest " + quote_name(near) + " first:";
    for (std::size_t i = 0; i < shown.size() && i < kListedTensors; ++i) {
        s += (i ? ", " : " ") + quote_name(shown[i]);
        if (sharded_) continue;
        const StoredTensor t = *find(shown[i]);
        s += " " + shape_text(t.shape) + " " + t.type_name;
    }
    if (shown.size() > kListedTensors) s += ", " + more_text(shown.size() - kListedTensors);
    return s;
}

std::size_t CheckpointFiles::shards_mapped() const {
    std::size_t n = 0;
    for (const auto& f : *files_) n += f.has_value();
    return n + (gguf_ ? 1 : 0);
}

}  // namespace swiglu::detail
