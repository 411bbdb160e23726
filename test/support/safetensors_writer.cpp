#include "safetensors_writer.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

namespace swiglu::test {

std::uint16_t to_bf16(float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    if (std::isnan(v)) return static_cast<std::uint16_t>((u >> 16) | 0x40);
    u += 0x7FFF + ((u >> 16) & 1);
    return static_cast<std::uint16_t>(u >> 16);
}

float from_bf16(std::uint16_t h) {
    const std::uint32_t u = std::uint32_t{h} << 16;
    float v;
    std::memcpy(&v, &u, 4);
    return v;
}

std::uint16_t to_f16(float v) {
    // Via the compiler's _Float16 conversion (round to nearest even).
    const _Float16 h = static_cast<_Float16>(v);
    std::uint16_t bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}

float from_f16(std::uint16_t bits) {
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    return static_cast<float>(h);
}

std::vector<float> rounded(const std::vector<float>& v, const std::string& dtype) {
    std::vector<float> out;
    for (float x : v)
        out.push_back(dtype == "BF16"  ? from_bf16(to_bf16(x))
                      : dtype == "F16" ? from_f16(to_f16(x))
                                       : x);
    return out;
}

std::string tensor_bytes(const TensorSpec& t) {
    std::string data;
    for (float v : t.values) {
        if (t.dtype == "F32") {
            data.append(reinterpret_cast<const char*>(&v), 4);
        } else if (t.dtype == "BF16" || t.dtype == "F16") {
            const std::uint16_t h = t.dtype == "BF16" ? to_bf16(v) : to_f16(v);
            data.append(reinterpret_cast<const char*>(&h), 2);
        } else {
            data.append(4, '\0');
        }
    }
    return data;
}

std::string safetensors_bytes(const std::vector<TensorSpec>& tensors,
                              const std::string& metadata_json) {
    std::vector<RawTensor> raw;
    for (const TensorSpec& t : tensors) raw.push_back({t.name, t.dtype, t.shape, tensor_bytes(t)});
    return safetensors_bytes_raw(raw, metadata_json);
}

std::string safetensors_bytes_raw(const std::vector<RawTensor>& tensors,
                                  const std::string& metadata_json) {
    std::string header = "{", data;
    if (!metadata_json.empty()) header += "\"__metadata__\":" + metadata_json;
    for (const RawTensor& t : tensors) {
        const std::size_t begin = data.size();
        data += t.bytes;
        if (header.size() > 1) header += ",";
        header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
        for (std::size_t i = 0; i < t.shape.size(); ++i)
            header += (i ? "," : "") + std::to_string(t.shape[i]);
        header += "],\"data_offsets\":[" + std::to_string(begin) + "," +
                  std::to_string(data.size()) + "]}";
    }
    header += "}";
    return safetensors_raw(header.size(), header, data);
}

std::string safetensors_raw(std::uint64_t header_length, const std::string& header,
                            const std::string& data) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header_length >> (8 * i)) & 0xFF);
    return out + header + data;
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

namespace {

// The directories this process made, removed with everything in them when
// it exits normally: a suite runs hundreds of times on a developer's machine
// and /tmp is not cleaned on every system (12,825 of them had piled up on
// ours). A test that crashes leaves its directory behind to look at.
class TempDirs {
public:
    std::string make() {
        std::string path = (std::filesystem::temp_directory_path() / "swiglu-test-XXXXXX").string();
        if (!mkdtemp(path.data())) throw std::runtime_error("mkdtemp failed in " + path);
        const std::lock_guard<std::mutex> lock(mutex_);
        made_.push_back(path);
        return path;
    }
    ~TempDirs() {
        std::error_code ignored;  // at exit there is nobody to tell
        for (const std::string& dir : made_) std::filesystem::remove_all(dir, ignored);
    }

private:
    std::mutex mutex_;
    std::vector<std::string> made_;
};

}  // namespace

std::string temp_dir() {
    static TempDirs dirs;
    return dirs.make();
}

}  // namespace swiglu::test
