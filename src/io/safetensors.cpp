// The safetensors reader: map the bytes, then check every length, key, type,
// shape and offset against the file before anything reads tensor data.
#include "io/safetensors.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include <swiglu/swiglu.hpp>

#include "common/mapped_file.hpp"
#include "common/messages.hpp"
#include "formats/format_table.hpp"
#include "io/file_kinds.hpp"
#include "io/strict_json.hpp"

// Tensor bytes are little-endian; we memcpy them straight into host values.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors reader assumes a little-endian host");

namespace swiglu::detail {

namespace {

using json = nlohmann::json;

// The same limit as the reference implementation: a header is a few KB to a
// few MB in practice, and this bounds what a hostile length field can make us
// parse (and the JSON tree built from it).
constexpr std::uint64_t kMaxHeaderLength = 100ull * 1000 * 1000;
// A valid header nests 3 deep (header object, tensor object, shape array).
// Capping it keeps a hostile "[[[[..." from growing the parser's stacks.
constexpr int kMaxNesting = 16;

// Every message starts with the file's label, so a user loading several
// files knows which one is broken.
struct Reporter {
    const std::string& label;
    [[noreturn]] void fail(const std::string& what) const { invalid(label + ": " + what); }
    [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
        fail("tensor " + quote_name(tensor) + ": " + what);
    }
};

std::string range_text(std::uint64_t begin, std::uint64_t end) {
    return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// A JSON value for a message: its text, cut short (it comes from the file).
std::string json_text(const json& value) {
    std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
    return s.size() > 60 ? s.substr(0, 60) + "..." : s;
}

std::uint64_t read_u64_le(const unsigned char* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

// The offset of the first byte that breaks UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing past U+10FFFF), or npos if all is well.
// Checked before JSON parsing so the message can point at the byte.
std::size_t invalid_utf8_at(const unsigned char* s, std::size_t n) {
    std::size_t i = 0;
    while (i < n) {
        const unsigned c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len;
        unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c == 0xE0) {
            len = 3, lo = 0xA0;  // below is overlong
        } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
            len = 3;
        } else if (c == 0xED) {
            len = 3, hi = 0x9F;  // above are UTF-16 surrogates
        } else if (c == 0xF0) {
            len = 4, lo = 0x90;  // below is overlong
        } else if (c >= 0xF1 && c <= 0xF3) {
            len = 4;
        } else if (c == 0xF4) {
            len = 4, hi = 0x8F;  // above is past U+10FFFF
        } else {
            return i;  // continuation byte without a lead, 0xC0, 0xC1, 0xF5..0xFF
        }
        if (n - i < len) return i;
        if (s[i + 1] < lo || s[i + 1] > hi) return i + 1;
        for (std::size_t k = 2; k < len; ++k)
            if ((s[i + k] & 0xC0) != 0x80) return i + k;
        i += len;
    }
    return std::string::npos;
}

// Checks the header (duplicates, nesting: io/strict_json.hpp), then builds
// its JSON tree.
json parse_header(const Reporter& r, const char* begin, const char* end) {
    const StrictJsonRules rules{
        "header", kMaxNesting, "a valid header nests 3 deep",
        [](const std::string& key, const std::string& inside) {
            return inside.empty()
                       ? "duplicate tensor name " + quote_name(key) + " in the header"
                       : "duplicate key " + quote_name(key) + " inside " + quote_name(inside);
        }};
    return parse_strict_json(std::string_view(begin, std::size_t(end - begin)), rules,
                             [&r](const std::string& what) { r.fail(what); });
}

// A JSON integer that fits in u64 (dimensions, offsets); otherwise a message
// saying what it is instead.
bool get_u64(const json& v, std::uint64_t& out, std::string& why) {
    if (v.is_number_unsigned()) {
        out = v.get<std::uint64_t>();
        return true;
    }
    if (v.is_number_integer()) {  // signed, so negative (nlohmann stores >= 0 as unsigned)
        const std::int64_t s = v.get<std::int64_t>();
        if (s >= 0) {
            out = static_cast<std::uint64_t>(s);
            return true;
        }
        why = "is negative (" + std::to_string(s) + ")";
        return false;
    }
    why = v.is_number_float() ? "is not an integer (" + json_text(v) + ")"
                              : "must be an integer, found " + std::string(v.type_name());
    return false;
}

const json& member(const Reporter& r, const std::string& name, const json& entry, const char* key,
                   bool (json::*is_type)() const noexcept, const char* type) {
    const auto it = entry.find(key);
    if (it == entry.end())
        r.fail(name, std::string("missing \"") + key +
                         "\"; expected {\"dtype\", \"shape\", \"data_offsets\"}");
    if (!((*it).*is_type)())
        r.fail(name, std::string("\"") + key + "\" must be " + type + ", found " + it->type_name() +
                         " " + json_text(*it));
    return *it;
}

TensorInfo parse_entry(const Reporter& r, const std::string& name, const json& entry,
                       std::uint64_t data_size) {
    if (!entry.is_object())
        r.fail(name,
               std::string("expected an object {\"dtype\", \"shape\", \"data_offsets\"}, found ") +
                   entry.type_name() + " " + json_text(entry));
    // Keys other than these three are ignored, as the reference reader does.
    const json& dtype = member(r, name, entry, "dtype", &json::is_string, "a string");
    const json& shape = member(r, name, entry, "shape", &json::is_array, "an array of integers");
    const json& offsets = member(r, name, entry, "data_offsets", &json::is_array, "[begin, end]");

    TensorInfo t;
    t.name = name;

    const auto& dtype_name = dtype.get_ref<const std::string&>();
    const std::optional<TensorDtype> parsed = parse_dtype(dtype_name);
    if (!parsed)
        r.fail(name, "unknown dtype " + quote_name(dtype_name) + "; safetensors dtypes are " +
                         safetensors_dtype_names());
    t.dtype = *parsed;

    // Element count, then bits, with every product checked: a shape such as
    // [2^32, 2^32, 16] wraps to 0 in plain 64-bit arithmetic.
    std::uint64_t elements = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        std::uint64_t dim;
        std::string why;
        if (!get_u64(shape[i], dim, why)) r.fail(name, "shape[" + std::to_string(i) + "] " + why);
        if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            r.fail(name, "shape[" + std::to_string(i) + "] = " + std::to_string(dim) +
                             " is too large (limit 2^63 - 1)");
        t.shape.push_back(static_cast<std::int64_t>(dim));
        if (__builtin_mul_overflow(elements, dim, &elements) ||
            elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            r.fail(name, "shape " + json_text(shape) + " has more elements than fit in 63 bits");
    }
    t.elements = static_cast<std::int64_t>(elements);
    std::uint64_t bits;
    if (__builtin_mul_overflow(elements, static_cast<std::uint64_t>(dtype_bits(t.dtype)), &bits))
        r.fail(name, "shape " + shape_text(t.shape) + " of " + dtype_name +
                         " is more bytes than fit in 64 bits");
    if (bits % 8 != 0)
        r.fail(name, "shape " + shape_text(t.shape) + " of " + dtype_name + " is " +
                         std::to_string(bits) + " bits, not a whole number of bytes");
    const std::uint64_t expected_bytes = bits / 8;

    if (offsets.size() != 2)
        r.fail(name, "\"data_offsets\" must be [begin, end], found " +
                         std::to_string(offsets.size()) + " elements " + json_text(offsets));
    std::uint64_t begin, end;
    std::string why;
    if (!get_u64(offsets[0], begin, why)) r.fail(name, "data_offsets[0] (begin) " + why);
    if (!get_u64(offsets[1], end, why)) r.fail(name, "data_offsets[1] (end) " + why);
    if (begin > end)
        r.fail(name, "data_offsets " + range_text(begin, end) +
                         " are out of order: expected begin <= end");
    if (end > data_size)
        r.fail(name,
               "data_offsets " + range_text(begin, end) + " end past the data (" +
                   std::to_string(data_size) +
                   " bytes after the header): the file is truncated or the offsets are wrong");
    if (end - begin != expected_bytes)
        r.fail(name, "shape " + shape_text(t.shape) + " of " + dtype_name + " is " +
                         std::to_string(expected_bytes) + " bytes, but data_offsets " +
                         range_text(begin, end) + " hold " + std::to_string(end - begin));
    t.offset = begin;
    t.bytes = end - begin;
    return t;
}

// "__metadata__" must be an object of strings, as the format says; we keep it
// (e.g. for `swiglu info`) but nothing depends on it.
std::map<std::string, std::string> parse_metadata(const Reporter& r, const json& value) {
    if (!value.is_object())
        r.fail(std::string("\"__metadata__\" must be an object of strings, found ") +
               value.type_name());
    std::map<std::string, std::string> out;
    for (auto it = value.begin(); it != value.end(); ++it) {
        if (!it.value().is_string())
            r.fail("\"__metadata__\" value for " + quote_name(it.key()) +
                   " must be a string, found " + it.value().type_name());
        out.emplace(it.key(), it.value().get<std::string>());
    }
    return out;
}

// Sorted by begin, the tensors must tile the data exactly: no byte read by
// two tensors, none read by no tensor (a hole could hide data, an overlap
// makes one tensor's bytes another's). Zero-byte tensors sort first at their
// offset and take no room.
void check_tiling(const Reporter& r, std::vector<TensorInfo>& tensors, std::uint64_t data_size) {
    std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        if (a.offset != b.offset) return a.offset < b.offset;
        if (a.bytes != b.bytes) return a.bytes < b.bytes;
        return a.name < b.name;
    });
    std::uint64_t position = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo& t : tensors) {
        const std::uint64_t end = t.offset + t.bytes;
        if (t.offset < position)
            r.fail(t.name, "data_offsets " + range_text(t.offset, end) + " overlap tensor " +
                               quote_name(previous->name) + " " +
                               range_text(previous->offset, position));
        if (t.offset > position)
            r.fail(t.name, "data_offsets " + range_text(t.offset, end) + " leave a hole of " +
                               std::to_string(t.offset - position) +
                               " bytes before it: expected begin " + std::to_string(position) +
                               (previous ? " (where " + quote_name(previous->name) + " ends)"
                                         : " (the first tensor starts the data)"));
        position = end;
        previous = &t;
    }
    if (position != data_size)
        r.fail(std::to_string(data_size - position) + " trailing bytes after the last tensor" +
               (previous ? " " + quote_name(previous->name) : std::string()) + ": the data is " +
               std::to_string(data_size) + " bytes but the tensors end at " +
               std::to_string(position));
}

}  // namespace

std::string quote_name(std::string_view name) {
    constexpr std::size_t kMax = 200;
    const json text = std::string(name.substr(0, kMax));
    // replace: a cut in the middle of a UTF-8 sequence must not throw here.
    return text.dump(-1, ' ', false, json::error_handler_t::replace) +
           (name.size() > kMax ? "..." : "");
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
    const WholeFile mapped = map_whole_file(path);
    SafetensorsFile file;
    file.label_ = one_line(path);
    file.size_ = mapped.size;
    file.owner_ = mapped.bytes;  // keeps the mapping alive, in this object and its copies
    file.bytes_ = file.owner_.get();
    // Note: if another process truncates the file while it is mapped, reads
    // past the new end fault (SIGBUS); mapping is still what big checkpoints need.
    file.parse();
    return file;
}

SafetensorsFile SafetensorsFile::from_memory(const void* data, std::size_t size,
                                             std::string label) {
    if (!data && size > 0) invalid(label + ": data is null but size is " + std::to_string(size));
    SafetensorsFile file;
    file.label_ = std::move(label);
    file.bytes_ = static_cast<const unsigned char*>(data);
    file.size_ = size;
    file.parse();
    return file;
}

void SafetensorsFile::parse() {
    const Reporter r{label_};
    // A file that does not start as safetensors does (a length that fits,
    // then '{') and starts as a file of a known kind: say what it is, not
    // what its first 8 bytes mean as a header length.
    const std::uint64_t length = size_ >= 8 ? read_u64_le(bytes_) : 0;
    const bool plausible = size_ > 8 && length > 0 && length <= size_ - 8 && bytes_[8] == '{';
    if (!plausible)
        if (const std::optional<std::string> kind = foreign_file_text(bytes_, size_, label_))
            r.fail(*kind);
    if (size_ < 8)
        r.fail("file is " + std::to_string(size_) +
               " bytes, shorter than the 8-byte header length that starts a safetensors file");
    const std::uint64_t n = read_u64_le(bytes_);
    if (n == 0) r.fail("header length is 0; expected a JSON object");
    if (n > kMaxHeaderLength)
        r.fail("header length " + std::to_string(n) + " exceeds the limit of " +
               std::to_string(kMaxHeaderLength) + " bytes (100 MB)");
    if (n > size_ - 8)
        r.fail("header length " + std::to_string(n) + " runs past the end of the file (" +
               std::to_string(size_ - 8) + " bytes follow the length field)");
    header_length_ = n;
    data_size_ = size_ - 8 - n;

    const unsigned char* header = bytes_ + 8;
    // The format requires '{' first; trailing whitespace (padding) is allowed.
    if (header[0] != '{') {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", header[0]);
        r.fail(std::string("header must start with '{', found byte ") + hex);
    }
    const std::size_t bad = invalid_utf8_at(header, n);
    if (bad != std::string::npos) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", header[bad]);
        r.fail(std::string("header is not valid UTF-8: byte ") + hex + " at header offset " +
               std::to_string(bad));
    }
    const char* text = reinterpret_cast<const char*>(header);
    // nlohmann stops at a NUL as if the input ended there, so "{...}\0<anything>"
    // would parse; valid JSON never holds a raw NUL (and padding is spaces).
    if (const void* nul = std::memchr(text, '\0', n))
        r.fail("header contains a NUL byte at header offset " +
               std::to_string(static_cast<const char*>(nul) - text) +
               "; JSON text cannot, and padding must be spaces");
    const json root = parse_header(r, text, text + n);
    if (!root.is_object())
        r.fail(std::string("header must be a JSON object, found ") + root.type_name());

    for (auto it = root.begin(); it != root.end(); ++it) {
        if (it.key() == "__metadata__")
            metadata_ = parse_metadata(r, it.value());
        else
            tensors_.push_back(parse_entry(r, it.key(), it.value(), data_size_));
    }
    check_tiling(r, tensors_, data_size_);
    for (std::size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const unsigned char* SafetensorsFile::tensor_data(const TensorInfo& tensor) const {
    // Only our own validated entries may address the bytes: a TensorInfo made
    // elsewhere (or from another file) could point anywhere.
    const TensorInfo* own = find(tensor.name);
    if (!own || own->offset != tensor.offset || own->bytes != tensor.bytes ||
        own->dtype != tensor.dtype || own->elements != tensor.elements)
        invalid(label_ + ": tensor " + quote_name(tensor.name) + " is not a tensor of this file");
    return bytes_ + 8 + header_length_ + own->offset;
}

std::vector<float> SafetensorsFile::to_f32(const TensorInfo& tensor) const {
    const unsigned char* p = tensor_data(tensor);
    const FormatTraits* format = format_by_safetensors(dtype_name(tensor.dtype));
    if (!format)
        throw Error(Status::unsupported,
                    label_ + ": tensor " + quote_name(tensor.name) + ": unsupported dtype " +
                        dtype_name(tensor.dtype) + "; only " +
                        format_names(FormatSet::safetensors, ", ", " and ") + " convert to f32");
    // Allocation is bounded by the file: elements <= bytes / 2.
    std::vector<float> out(static_cast<std::size_t>(tensor.elements));
    if (!out.empty()) format->decode(p, out.size(), out.data());
    return out;
}

}  // namespace swiglu::detail
