// The GGUF reader: a bounded cursor over the mapped bytes; every count is
// checked against what is left before it is used.
#include "io/gguf.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include <swiglu/swiglu.hpp>

#include "common/mapped_file.hpp"
#include "common/messages.hpp"
#include "io/safetensors.hpp"  // quote_name

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "GGUF reader assumes a little-endian host");

namespace swiglu::detail {

namespace {

constexpr GgmlType kTypes[] = {
    {0, "F32", 1, 4},       {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},    {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},    {7, "Q5_1", 32, 24},    {8, "Q8_0", 32, 34},    {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},  {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {24, "I8", 1, 1},       {25, "I16", 1, 2},
    {26, "I32", 1, 4},      {27, "I64", 1, 8},      {28, "F64", 1, 8},      {30, "BF16", 1, 2},
};

constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxDims = 4;                   // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;
const char* const kAlignmentKey = "general.alignment";

enum ValueType : std::uint32_t {
    kU8 = 0,
    kI8,
    kU16,
    kI16,
    kU32,
    kI32,
    kF32,
    kBool,
    kString,
    kArray,
    kU64,
    kI64,
    kF64,
};

// Bytes of a fixed-size value type; 0 for string and array; -1 unknown.
int value_size(std::uint32_t type) {
    switch (type) {
        case kU8:
        case kI8:
        case kBool: return 1;
        case kU16:
        case kI16: return 2;
        case kU32:
        case kI32:
        case kF32: return 4;
        case kU64:
        case kI64:
        case kF64: return 8;
        case kString:
        case kArray: return 0;
        default: return -1;
    }
}

// Reads the file front to back; every failure names the file and the offset.
class Cursor {
public:
    Cursor(const unsigned char* bytes, std::size_t size, const std::string& label)
        : bytes_(bytes), size_(size), label_(label) {}

    [[noreturn]] void fail(const std::string& what) const { invalid(label_ + ": " + what); }
    std::size_t at() const { return at_; }
    std::size_t left() const { return size_ - at_; }

    void need(std::uint64_t n, const char* what) const {
        if (n > left())
            fail(std::string(what) + " at offset " + std::to_string(at_) + " needs " +
                 std::to_string(n) + " bytes, " + std::to_string(left()) +
                 " are left: the file is truncated or a length is wrong");
    }
    template <class T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, bytes_ + at_, sizeof(T));
        at_ += sizeof(T);
        return v;
    }
    void skip(std::uint64_t n, const char* what) {
        need(n, what);
        at_ += static_cast<std::size_t>(n);
    }
    std::string_view string(const char* what) {
        const auto n = read<std::uint64_t>(what);
        need(n, what);
        const std::string_view s(reinterpret_cast<const char*>(bytes_ + at_),
                                 static_cast<std::size_t>(n));
        at_ += static_cast<std::size_t>(n);
        return s;
    }
    // A count of items of at least `min_bytes` each: more than the bytes
    // left could hold is a lie, refused before any loop runs over it.
    std::uint64_t count(std::uint64_t n, std::uint64_t min_bytes, const std::string& what) const {
        if (min_bytes > 0 && n > left() / min_bytes)
            fail(what + " " + std::to_string(n) + " cannot fit in the " + std::to_string(left()) +
                 " bytes left (each takes at least " + std::to_string(min_bytes) + ")");
        return n;
    }

private:
    const unsigned char* bytes_;
    std::size_t size_;
    const std::string& label_;
    std::size_t at_ = 0;
};

// Checks and skips one value of `type` (an array's elements recursively).
void skip_value(Cursor& c, std::uint32_t type, const std::string& key, int depth) {
    const int size = value_size(type);
    if (size < 0)
        c.fail("metadata " + quote_name(key) + " has value type " + std::to_string(type) +
               ", which GGUF does not define (0 to 12)");
    if (size > 0) return c.skip(std::uint64_t(size), "a metadata value");
    if (type == kString) {
        c.string("a metadata string");
        return;
    }
    if (depth >= kMaxArrayNesting)
        c.fail("metadata " + quote_name(key) + " nests arrays deeper than " +
               std::to_string(kMaxArrayNesting));
    const auto element = c.read<std::uint32_t>("an array's element type");
    const int element_size = value_size(element);
    if (element_size < 0)
        c.fail("metadata " + quote_name(key) + " is an array of value type " +
               std::to_string(element) + ", which GGUF does not define (0 to 12)");
    // Strings and arrays take at least 8 bytes (their length or type+count).
    const std::uint64_t n = c.count(c.read<std::uint64_t>("an array's length"),
                                    element_size > 0 ? std::uint64_t(element_size) : 8,
                                    "metadata " + quote_name(key) + ": array length");
    if (element_size > 0) return c.skip(n * std::uint64_t(element_size), "an array");
    for (std::uint64_t i = 0; i < n; ++i) skip_value(c, element, key, depth + 1);
}

// A scalar's value, read (the cursor checked there are size bytes).
double scalar_value(Cursor& c, std::uint32_t type) {
    switch (type) {
        case kU8: return c.read<std::uint8_t>("a metadata value");
        case kI8: return c.read<std::int8_t>("a metadata value");
        case kU16: return c.read<std::uint16_t>("a metadata value");
        case kI16: return c.read<std::int16_t>("a metadata value");
        case kU32: return c.read<std::uint32_t>("a metadata value");
        case kI32: return c.read<std::int32_t>("a metadata value");
        case kF32: return c.read<float>("a metadata value");
        case kBool: return c.read<std::uint8_t>("a metadata value") != 0;
        case kU64: return double(c.read<std::uint64_t>("a metadata value"));
        case kI64: return double(c.read<std::int64_t>("a metadata value"));
        default: return c.read<double>("a metadata value");  // kF64
    }
}

bool mul_overflows(std::int64_t a, std::int64_t b, std::int64_t& out) {
    return __builtin_mul_overflow(a, b, &out);
}

}  // namespace

const char* gguf_value_type_name(std::uint32_t type) {
    static const char* const names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

const GgmlType* ggml_type(std::uint32_t id) {
    for (const GgmlType& t : kTypes)
        if (t.id == id) return &t;
    return nullptr;
}

std::string ggml_type_name(std::uint32_t id) {
    const GgmlType* t = ggml_type(id);
    return t ? t->name : "ggml type " + std::to_string(id);
}

bool GgufFile::has_magic(std::string_view bytes) {
    return bytes.size() >= 4 && bytes.compare(0, 4, "GGUF") == 0;
}

GgufFile GgufFile::open(const std::string& path) {
    const WholeFile mapped = map_whole_file(path);
    GgufFile file;
    file.label_ = one_line(path);
    file.size_ = mapped.size;
    file.owner_ = mapped.bytes;
    file.bytes_ = file.owner_.get();
    file.parse();
    return file;
}

GgufFile GgufFile::from_memory(const void* data, std::size_t size, std::string label) {
    if (!data && size > 0) invalid(label + ": data is null but size is " + std::to_string(size));
    GgufFile file;
    file.label_ = std::move(label);
    file.bytes_ = static_cast<const unsigned char*>(data);
    file.size_ = size;
    file.parse();
    return file;
}

void GgufFile::parse() {
    Cursor c(bytes_, size_, label_);
    if (size_ < 4 || c.read<std::uint32_t>("the magic") != kMagic)
        c.fail("not a GGUF file: it does not start with \"GGUF\"");
    version_ = c.read<std::uint32_t>("the version");
    if (version_ == 1)
        c.fail("GGUF version 1 (32-bit counts) is not supported; llama.cpp converts it to 3");
    if (version_ != 2 && version_ != 3) {
        std::uint32_t swapped = __builtin_bswap32(version_);
        if (swapped == 2 || swapped == 3) c.fail("a big-endian GGUF file: not supported");
        c.fail("GGUF version " + std::to_string(version_) + " is not supported (2 or 3)");
    }
    const auto n_tensors = c.read<std::uint64_t>("the tensor count");
    const auto n_metadata = c.read<std::uint64_t>("the metadata count");
    // A key takes 12 bytes at least (its length and the value type), a
    // tensor info 32 (name length, dimension count, one dimension, type, offset).
    c.count(n_metadata, 12, "metadata count");
    c.count(n_tensors, 32, "tensor count");

    std::map<std::string, bool, std::less<>> keys;
    for (std::uint64_t i = 0; i < n_metadata; ++i) {
        const std::string key(c.string("a metadata key"));
        if (!keys.emplace(key, true).second) c.fail("duplicate metadata key " + quote_name(key));
        const auto type = c.read<std::uint32_t>("a metadata value type");
        if (key == kAlignmentKey) {
            if (type != kU32)
                c.fail(std::string(kAlignmentKey) + " has value type " + std::to_string(type) +
                       "; GGUF requires a u32 (4)");
            alignment_ = c.read<std::uint32_t>("the alignment");
            if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
                c.fail(std::string(kAlignmentKey) + " is " + std::to_string(alignment_) +
                       "; it must be a power of two");
            continue;
        }
        if (type == kString) {
            strings_[key] = std::string(c.string("a metadata string"));
            continue;
        }
        if (value_size(type) > 0) {
            scalars_[key] = GgufScalar{type, scalar_value(c, type)};
            continue;
        }
        skip_value(c, type, key, 0);
    }

    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensor t;
        t.name = std::string(c.string("a tensor name"));
        const std::string who = "tensor " + quote_name(t.name);
        if (index_.count(t.name)) c.fail("duplicate " + who);
        const auto dims = c.read<std::uint32_t>("a dimension count");
        if (dims < 1 || dims > kMaxDims)
            c.fail(who + " has " + std::to_string(dims) + " dimensions; GGUF allows 1 to 4");
        t.elements = 1;
        for (std::uint32_t k = 0; k < dims; ++k) {
            const auto n = c.read<std::uint64_t>("a dimension");
            if (n > std::uint64_t(std::numeric_limits<std::int64_t>::max()) ||
                mul_overflows(t.elements, std::int64_t(n), t.elements))
                c.fail(who + ": dimensions whose product overflows 64 bits");
            t.ne.push_back(std::int64_t(n));
        }
        t.shape.assign(t.ne.rbegin(), t.ne.rend());
        t.type = c.read<std::uint32_t>("a tensor type");
        t.offset = c.read<std::uint64_t>("a tensor offset");
        if (t.offset % alignment_ != 0)
            c.fail(who + ": offset " + std::to_string(t.offset) + " is not a multiple of the " +
                   "alignment " + std::to_string(alignment_));
        if (const GgmlType* type = ggml_type(t.type)) {
            if (t.ne[0] % type->block != 0)
                c.fail(who + ": a row of " + std::to_string(t.ne[0]) + " values is not a whole " +
                       "number of " + type->name + " blocks of " + std::to_string(type->block));
            std::int64_t bytes = 0;
            if (mul_overflows(t.elements / type->block, type->bytes, bytes))
                c.fail(who + ": its size in bytes overflows 64 bits");
            t.bytes = std::uint64_t(bytes);
        }
        index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }

    // The data section starts at the next multiple of the alignment (a file
    // without tensors may end before it).
    const std::uint64_t end = c.at();
    data_start_ = (end + alignment_ - 1) / alignment_ * alignment_;
    if (data_start_ < end || (data_start_ > size_ && !tensors_.empty()))
        c.fail("the data section would start at offset " + std::to_string(data_start_) +
               ", past the end of the file (" + std::to_string(size_) + " bytes)");
    const std::uint64_t data_size = data_start_ <= size_ ? size_ - data_start_ : 0;
    // Known tensors lie inside the data and do not overlap.
    std::vector<const GgufTensor*> sorted;
    for (const GgufTensor& t : tensors_) {
        const std::string who = "tensor " + quote_name(t.name);
        if (t.offset > data_size || (ggml_type(t.type) && t.bytes > data_size - t.offset))
            c.fail(who + ": bytes [" + std::to_string(t.offset) + ", " +
                   std::to_string(t.offset + t.bytes) + ") of the data run past its end (" +
                   std::to_string(data_size) + " bytes): the file is truncated");
        if (ggml_type(t.type) && t.bytes > 0) sorted.push_back(&t);
    }
    std::sort(sorted.begin(), sorted.end(),
              [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < sorted.size(); ++i)
        if (sorted[i]->offset < sorted[i - 1]->offset + sorted[i - 1]->bytes)
            c.fail("tensors " + quote_name(sorted[i - 1]->name) + " and " +
                   quote_name(sorted[i]->name) + " overlap in the data");
}

const GgufTensor* GgufFile::find(std::string_view name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const GgufScalar* GgufFile::scalar(std::string_view key) const {
    const auto it = scalars_.find(key);
    return it == scalars_.end() ? nullptr : &it->second;
}

const unsigned char* GgufFile::tensor_data(const GgufTensor& tensor) const {
    const GgufTensor* own = find(tensor.name);
    if (!own || own->offset != tensor.offset || own->bytes != tensor.bytes || !ggml_type(own->type))
        invalid(label_ + ": tensor " + quote_name(tensor.name) +
                " is not a readable tensor of this file");
    return bytes_ + data_start_ + own->offset;
}

}  // namespace swiglu::detail
