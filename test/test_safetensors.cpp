// The safetensors reader: exact half-precision widening, well-formed files
// (aligned or not), and one malformed file per validation rule, each of which
// must fail with its own message and never crash.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <swiglu/swiglu.hpp>

#include "common/half.hpp"
#include "error_checks.hpp"
#include "io/safetensors.hpp"
#include "safetensors_writer.hpp"

using namespace swiglu;
using detail::SafetensorsFile;
using detail::TensorDtype;
using detail::TensorInfo;
using swiglu::test::contains;
namespace t = swiglu::test;

namespace {

// A file from a header text and data bytes, the length field matching.
std::string raw(const std::string& header, const std::string& data = "") {
    return t::safetensors_raw(header.size(), header, data);
}

// One header entry, written by hand so any field can be wrong.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":" + offsets + "}";
}

// from_memory does not copy: the bytes must outlive the file.
SafetensorsFile open_bytes(const std::string& bytes) {
    return SafetensorsFile::from_memory(bytes.data(), bytes.size());
}

// A file opened from bytes that it keeps alive.
struct MemoryFile {
    explicit MemoryFile(std::string b)
        : bytes(std::move(b)), file(SafetensorsFile::from_memory(bytes.data(), bytes.size())) {}
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;
    const std::string bytes;
    const SafetensorsFile file;
};

// The message of the Error that opening `bytes` throws, "" (and a failed
// check) if it does not throw one.
std::string error_of(const std::string& bytes, Status status = Status::invalid_argument) {
    return t::error_message([&] { open_bytes(bytes); }, status);
}

// Each malformed file must name the source and give its rule's message.
#define CHECK_REJECTED(bytes, needle)                 \
    do {                                              \
        const std::string message_ = error_of(bytes); \
        INFO("message: " << message_);                \
        CHECK(contains(message_, "<memory>: "));      \
        CHECK(contains(message_, needle));            \
    } while (0)

std::string f32_bytes(const std::vector<float>& v) { return t::tensor_bytes({"", "F32", {}, v}); }

// A valid three-tensor file: "a" F32 [2, 3], "b" BF16 [3], "c" F16 [2].
const std::vector<float> kA = {1, -2, 3.5f, 0, -0.0f, 1e-3f};
const std::vector<float> kB = {1.0f / 3, -7, 65504};
const std::vector<float> kC = {0.1f, -6e-8f};

std::string three_tensors(const std::string& metadata = "") {
    return t::safetensors_bytes(
        {{"a", "F32", {2, 3}, kA}, {"b", "BF16", {3}, kB}, {"c", "F16", {2}, kC}}, metadata);
}

void check_three_tensors(const SafetensorsFile& file) {
    REQUIRE(file.tensors().size() == 3);
    const TensorInfo* a = file.find("a");
    const TensorInfo* b = file.find("b");
    const TensorInfo* c = file.find("c");
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(c);
    CHECK(file.find("d") == nullptr);
    CHECK(a->dtype == TensorDtype::F32);
    CHECK(a->shape == std::vector<std::int64_t>{2, 3});
    CHECK(a->elements == 6);
    CHECK(a->offset == 0);
    CHECK(a->bytes == 24);
    CHECK(b->dtype == TensorDtype::BF16);
    CHECK(b->offset == 24);
    CHECK(b->bytes == 6);
    CHECK(c->dtype == TensorDtype::F16);
    CHECK(c->offset == 30);
    CHECK(c->bytes == 4);
    CHECK(file.data_size() == 34);
    CHECK(file.to_f32(*a) == kA);
    CHECK(file.to_f32(*b) == t::rounded(kB, "BF16"));
    CHECK(file.to_f32(*c) == t::rounded(kC, "F16"));
}

std::uint32_t bits_of(float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
}

}  // namespace

TEST_SUITE("safetensors") {

TEST_CASE("f16 and bf16 widen exactly: all 65536 values") {
    for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        // The compiler's _Float16 conversion is the oracle for f16.
        const float want_f16 = t::from_f16(bits);
        const float got_f16 = detail::f16_to_f32(bits);
        if (std::isnan(want_f16)) {
            // NaN keeps sign and payload: the f16 mantissa becomes the top of the f32 one.
            CHECK(std::isnan(got_f16));
            CHECK(bits_of(got_f16) == (((h & 0x8000u) << 16) | 0x7F800000u | ((h & 0x3FFu) << 13)));
        } else {
            CHECK(bits_of(got_f16) == bits_of(want_f16));
        }
        CHECK(bits_of(detail::bf16_to_f32(bits)) == (h << 16));
    }
    // Spot checks that say what the cases are.
    CHECK(detail::f16_to_f32(0x0001) == std::ldexp(1.0f, -24));         // smallest subnormal
    CHECK(detail::f16_to_f32(0x03FF) == 1023 * std::ldexp(1.0f, -24));  // largest subnormal
    CHECK(detail::f16_to_f32(0x0400) == std::ldexp(1.0f, -14));         // smallest normal
    CHECK(detail::f16_to_f32(0x7BFF) == 65504.0f);
    CHECK(detail::f16_to_f32(0x7C00) == std::numeric_limits<float>::infinity());
    CHECK(detail::f16_to_f32(0xFC00) == -std::numeric_limits<float>::infinity());
    CHECK(std::signbit(detail::f16_to_f32(0x8000)));
    CHECK(detail::bf16_to_f32(0x3F80) == 1.0f);
}

TEST_CASE("dtype names and sizes") {
    CHECK(detail::parse_dtype("BF16") == TensorDtype::BF16);
    CHECK(detail::parse_dtype("F8_E4M3") == TensorDtype::F8_E4M3);
    CHECK(!detail::parse_dtype("bf16"));  // names are case-sensitive
    CHECK(!detail::parse_dtype("Q4_0"));
    CHECK(std::string(detail::dtype_name(TensorDtype::F16)) == "F16");
    CHECK(detail::dtype_bits(TensorDtype::F4) == 4);
    CHECK(detail::dtype_bits(TensorDtype::F6_E3M2) == 6);
    CHECK(detail::dtype_bits(TensorDtype::BOOL) == 8);
    CHECK(detail::dtype_bits(TensorDtype::BF16) == 16);
    CHECK(detail::dtype_bits(TensorDtype::C64) == 64);
}

TEST_CASE("reads a well-formed file from memory and from disk") {
    const std::string bytes = three_tensors();
    const SafetensorsFile mem = open_bytes(bytes);
    CHECK(mem.label() == "<memory>");
    check_three_tensors(mem);
    CHECK(mem.metadata().empty());

    const std::string path = t::temp_dir() + "/three.safetensors";
    t::write_file(path, bytes);
    const SafetensorsFile disk = SafetensorsFile::open(path);
    CHECK(disk.label() == path);
    check_three_tensors(disk);
    CHECK(disk.header_length() == mem.header_length());
    // Copies share the mapping, which outlives the original.
    SafetensorsFile copy = disk;
    {
        const SafetensorsFile gone = std::move(copy);
        check_three_tensors(gone);
    }
    check_three_tensors(disk);
}

TEST_CASE("__metadata__ is read and kept apart from the tensors") {
    const MemoryFile memory(three_tensors(R"({"format":"pt","note":"\u00e9"})"));
    const SafetensorsFile& file = memory.file;
    check_three_tensors(file);
    CHECK(file.metadata().size() == 2);
    CHECK(file.metadata().at("format") == "pt");
    CHECK(file.metadata().at("note") == "\xc3\xa9");
    CHECK(file.find("__metadata__") == nullptr);
}

TEST_CASE("tensors need not be aligned: odd offsets, odd buffer address") {
    // 3 bytes of U8 first put every later tensor at an odd offset.
    const std::vector<float> bf = {1.5f, -2.25f, 3};  // odd length: 6 bytes
    const std::vector<float> f32 = {0.1f, -0.2f, 0.3f, 4e-30f, -5};
    const std::vector<float> f16 = {7, -0.5f};
    const std::string bytes = t::safetensors_bytes_raw({
        {"pad", "U8", {3}, "xyz"},
        {"bf", "BF16", {3}, t::tensor_bytes({"", "BF16", {}, bf})},
        {"f32", "F32", {5}, f32_bytes(f32)},
        {"f16", "F16", {1, 2}, t::tensor_bytes({"", "F16", {}, f16})},
    });
    // And the buffer itself at an odd address.
    std::vector<unsigned char> storage(bytes.size() + 1);
    std::memcpy(storage.data() + 1, bytes.data(), bytes.size());
    const SafetensorsFile file = SafetensorsFile::from_memory(storage.data() + 1, bytes.size());
    CHECK(file.find("bf")->offset == 3);
    CHECK(file.find("f32")->offset == 9);
    CHECK(file.find("f16")->offset == 29);
    CHECK(file.to_f32(*file.find("bf")) == bf);
    CHECK(file.to_f32(*file.find("f32")) == f32);
    CHECK(file.to_f32(*file.find("f16")) == f16);
    CHECK(std::memcmp(file.tensor_data(*file.find("pad")), "xyz", 3) == 0);
}

TEST_CASE("header order need not be data order") {
    // Valid: JSON objects are unordered; the tiling is checked sorted by offset.
    const std::string header = "{" + entry("second", "F32", "[1]", "[4,8]") + "," +
                               entry("first", "F32", "[1]", "[0,4]") + "}";
    const MemoryFile memory(raw(header, f32_bytes({1, 2})));
    const SafetensorsFile& file = memory.file;
    REQUIRE(file.tensors().size() == 2);
    CHECK(file.tensors()[0].name == "first");
    CHECK(file.tensors()[1].name == "second");
    CHECK(file.to_f32(*file.find("second")) == std::vector<float>{2});
}

TEST_CASE("trailing whitespace pads the header") {
    const std::string header = "{" + entry("a", "F32", "[1]", "[0,4]") + "}    \n ";
    const MemoryFile memory(raw(header, f32_bytes({42})));
    const SafetensorsFile& file = memory.file;
    CHECK(file.to_f32(*file.find("a")) == std::vector<float>{42});
}

TEST_CASE("empty, zero-element and scalar tensors") {
    CHECK(MemoryFile(raw("{}")).file.tensors().empty());
    const std::string header = "{" + entry("empty", "F32", "[0,5]", "[0,0]") + "," +
                               entry("scalar", "F32", "[]", "[0,4]") + "," +
                               entry("empty2", "BF16", "[3,0]", "[4,4]") + "}";
    const MemoryFile memory(raw(header, f32_bytes({9})));
    const SafetensorsFile& file = memory.file;
    CHECK(file.find("empty")->elements == 0);
    CHECK(file.to_f32(*file.find("empty")).empty());
    CHECK(file.to_f32(*file.find("empty2")).empty());
    CHECK(file.find("scalar")->elements == 1);
    CHECK(file.to_f32(*file.find("scalar")) == std::vector<float>{9});
}

TEST_CASE("sub-byte dtypes are sized in bits") {
    // F4: 4 bits per element, so [6] is 3 bytes; F6: [4] is 3 bytes.
    const std::string header = "{" + entry("f4", "F4", "[6]", "[0,3]") + "," +
                               entry("f6", "F6_E2M3", "[4]", "[3,6]") + "}";
    CHECK(MemoryFile(raw(header, "abcdef")).file.tensors().size() == 2);
}

TEST_CASE("to_f32 refuses dtypes it cannot convert, and foreign tensors") {
    const std::string header = "{" + entry("i", "I32", "[2]", "[0,8]") + "}";
    const MemoryFile memory(raw(header, std::string(8, '\0')));
    const SafetensorsFile& file = memory.file;
    try {
        file.to_f32(*file.find("i"));
        FAIL("accepted I32");
    } catch (const Error& e) {
        CHECK(e.status() == Status::unsupported);
        CHECK(contains(e.what(), "tensor \"i\": unsupported dtype I32"));
    }
    TensorInfo forged = *file.find("i");
    forged.offset = 1000;
    CHECK_THROWS_WITH_AS(file.to_f32(forged), doctest::Contains("not a tensor of this file"),
                         Error);
    forged.name = "nope";
    CHECK_THROWS_AS(file.tensor_data(forged), Error);
}

TEST_CASE("a header of many tensors parses in linear time") {
    // nlohmann's parser callback rescans the parent object at every object
    // end, O(n^2) in the tensor count: 50000 tensors took minutes. This
    // guards against a return to anything like it (linear: well under 1 s).
    std::vector<t::RawTensor> tensors;
    for (int i = 0; i < 50000; ++i) tensors.push_back({"t" + std::to_string(i), "BF16", {1}, "ab"});
    const std::string bytes = t::safetensors_bytes_raw(tensors);
    const auto start = std::chrono::steady_clock::now();
    const SafetensorsFile file = open_bytes(bytes);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE("50000 tensors, " << bytes.size() << " bytes: opened in " << seconds << " s");
    CHECK(file.tensors().size() == 50000);
    CHECK(file.find("t49999")->offset == 2 * 49999);
    CHECK(seconds < 10);
}

TEST_CASE("names in messages are quoted, escaped and cut short") {
    CHECK(detail::quote_name("a\"b\n") == "\"a\\\"b\\n\"");
    const std::string long_name(1000, 'x');
    CHECK(detail::quote_name(long_name) == "\"" + std::string(200, 'x') + "\"...");
    // Cutting inside a UTF-8 sequence must not throw.
    CHECK(!detail::quote_name(std::string(199, 'x') + "\xc3\xa9").empty());
}

// ---- one malformed file per rule ----

TEST_CASE("rejects: file shorter than 8 bytes") {
    CHECK_REJECTED(std::string(), "file is 0 bytes, shorter than the 8-byte header length");
    CHECK_REJECTED(std::string(7, '\0'), "file is 7 bytes, shorter than the 8-byte header length");
    CHECK_THROWS_AS(SafetensorsFile::from_memory(nullptr, 0), Error);
    CHECK_THROWS_WITH_AS(SafetensorsFile::from_memory(nullptr, 8),
                         doctest::Contains("data is null"), Error);
}

TEST_CASE("rejects: header length 0") {
    CHECK_REJECTED(t::safetensors_raw(0, "", ""), "header length is 0");
}

TEST_CASE("rejects: header length over 100 MB") {
    CHECK_REJECTED(t::safetensors_raw(100'000'001, "{}", ""),
                   "header length 100000001 exceeds the limit of 100000000 bytes");
    CHECK_REJECTED(t::safetensors_raw(~std::uint64_t{0}, "{}", ""), "exceeds the limit");
}

TEST_CASE("rejects: header length past the end of the file") {
    CHECK_REJECTED(t::safetensors_raw(50, "{}", "1234"),
                   "header length 50 runs past the end of the file (6 bytes follow");
    CHECK_REJECTED(t::safetensors_raw(1, "", ""), "header length 1 runs past the end");
}

TEST_CASE("rejects: header not starting with '{'") {
    CHECK_REJECTED(raw("[]"), "header must start with '{', found byte 0x5b");
    CHECK_REJECTED(raw(" {}"), "header must start with '{', found byte 0x20");
    CHECK_REJECTED(raw("\"a\""), "header must start with '{'");
}

TEST_CASE("rejects: header not valid UTF-8") {
    CHECK_REJECTED(raw("{\"\xff\":{}}"), "header is not valid UTF-8: byte 0xff at header offset 2");
    CHECK_REJECTED(raw("{\"\xc0\xaf\":{}}"), "not valid UTF-8: byte 0xc0");  // overlong '/'
    CHECK_REJECTED(raw("{\"\xe0\x80\xaf\":{}}"),
                   "not valid UTF-8: byte 0x80");  // overlong, 3 bytes
    CHECK_REJECTED(raw("{\"\xed\xa0\x80\":{}}"), "not valid UTF-8: byte 0xa0");      // a surrogate
    CHECK_REJECTED(raw("{\"\xf4\x90\x80\x80\":{}}"), "not valid UTF-8: byte 0x90");  // > U+10FFFF
    CHECK_REJECTED(raw("{\"\xe2\x82\":{}}"), "not valid UTF-8");                     // cut short
    CHECK_REJECTED(raw("{\"\x80\":{}}"), "not valid UTF-8: byte 0x80");  // lone continuation
    CHECK_REJECTED(raw("{}\xe2\x82"), "not valid UTF-8");                // cut at the very end
}

TEST_CASE("rejects: header not valid JSON") {
    CHECK_REJECTED(raw("{\"a\":"), "header is not valid JSON: [json.exception.parse_error");
    CHECK_REJECTED(raw("{} x"), "header is not valid JSON");
    CHECK_REJECTED(raw("{\"a\":1,}"), "header is not valid JSON");
    CHECK_REJECTED(raw("{\"a\":1e999}"), "header is not valid JSON");
    CHECK_REJECTED(raw("{\"a\x01\":{}}"), "header is not valid JSON");  // control character
}

TEST_CASE("rejects: a NUL byte in the header") {
    // The JSON parser would stop at the NUL and ignore what follows.
    CHECK_REJECTED(raw(std::string("{}\0\0", 4)), "header contains a NUL byte at header offset 2");
    CHECK_REJECTED(raw(std::string("{}\0{\"a\":1}", 10)),
                   "header contains a NUL byte at header offset 2");
    CHECK_REJECTED(raw(std::string("{\"a\0\":{}}", 9)),
                   "header contains a NUL byte at header offset 3");
}

TEST_CASE("rejects: header nested too deep") {
    const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    CHECK_REJECTED(raw(deep), "header nests deeper than 16 levels");
}

TEST_CASE("rejects: duplicate tensor names") {
    const std::string header =
        "{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("a", "F32", "[1]", "[4,8]") + "}";
    CHECK_REJECTED(raw(header, f32_bytes({1, 2})), "duplicate tensor name \"a\" in the header");
    // Inside an entry too: which "dtype" counts would depend on the reader.
    CHECK_REJECTED(raw(R"({"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})",
                       f32_bytes({1})),
                   "duplicate key \"dtype\" inside \"a\"");
    CHECK_REJECTED(raw(R"({"__metadata__":{},"__metadata__":{}})"),
                   "duplicate tensor name \"__metadata__\"");
}

TEST_CASE("rejects: an entry that is not an object") {
    CHECK_REJECTED(
        raw(R"({"a":[1,2]})"),
        "tensor \"a\": expected an object {\"dtype\", \"shape\", \"data_offsets\"}, found array");
    CHECK_REJECTED(raw(R"({"a":"F32"})"), "tensor \"a\": expected an object");
}

TEST_CASE("rejects: an entry missing dtype, shape or data_offsets") {
    CHECK_REJECTED(raw(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", f32_bytes({1})),
                   "tensor \"a\": missing \"dtype\"");
    CHECK_REJECTED(raw(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", f32_bytes({1})),
                   "tensor \"a\": missing \"shape\"");
    CHECK_REJECTED(raw(R"({"a":{"dtype":"F32","shape":[1]}})", f32_bytes({1})),
                   "tensor \"a\": missing \"data_offsets\"");
}

TEST_CASE("rejects: fields of the wrong JSON type") {
    CHECK_REJECTED(raw(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", f32_bytes({1})),
                   "tensor \"a\": \"dtype\" must be a string, found number 7");
    CHECK_REJECTED(
        raw(R"({"a":{"dtype":"F32","shape":{"0":1},"data_offsets":[0,4]}})", f32_bytes({1})),
        "tensor \"a\": \"shape\" must be an array of integers, found object");
    CHECK_REJECTED(raw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":"0-4"}})", f32_bytes({1})),
                   "tensor \"a\": \"data_offsets\" must be [begin, end], found string");
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[1]", "[0,4,8]") + "}", f32_bytes({1})),
                   "\"data_offsets\" must be [begin, end], found 3 elements");
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[1]", "[0]") + "}", f32_bytes({1})),
                   "\"data_offsets\" must be [begin, end], found 1 elements");
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[1]", "[0.0,4]") + "}", f32_bytes({1})),
                   "data_offsets[0] (begin) is not an integer (0.0)");
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[1]", "[0,\"4\"]") + "}", f32_bytes({1})),
                   "data_offsets[1] (end) must be an integer, found string");
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[1]", "[-4,4]") + "}", f32_bytes({1})),
                   "data_offsets[0] (begin) is negative (-4)");
}

TEST_CASE("rejects: unknown dtype") {
    CHECK_REJECTED(raw("{" + entry("a", "Q4_0", "[1]", "[0,4]") + "}", f32_bytes({1})),
                   "tensor \"a\": unknown dtype \"Q4_0\"; safetensors dtypes are BOOL F4");
    CHECK_REJECTED(raw("{" + entry("a", "f32", "[1]", "[0,4]") + "}", f32_bytes({1})),
                   "unknown dtype \"f32\"");
}

TEST_CASE("rejects: dimensions negative, not integers, or too large") {
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[2,-3]", "[0,4]") + "}", f32_bytes({1})),
                   "tensor \"a\": shape[1] is negative (-3)");
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[2.5]", "[0,4]") + "}", f32_bytes({1})),
                   "shape[0] is not an integer (2.5)");
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[\"1\"]", "[0,4]") + "}", f32_bytes({1})),
                   "shape[0] must be an integer, found string");
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[[1]]", "[0,4]") + "}", f32_bytes({1})),
                   "shape[0] must be an integer, found array");
    CHECK_REJECTED(
        raw("{" + entry("a", "F32", "[9223372036854775808]", "[0,4]") + "}", f32_bytes({1})),
        "shape[0] = 9223372036854775808 is too large");
    CHECK_REJECTED(
        raw("{" + entry("a", "F32", "[99999999999999999999999]", "[0,4]") + "}", f32_bytes({1})),
        "shape[0] is not an integer");  // parsed as a float
}

TEST_CASE("rejects: shape product or byte size that wraps 64 bits") {
    // 2^32 * 2^32 * 16 = 2^68 elements: wraps to 0 in plain u64 arithmetic.
    CHECK_REJECTED(
        raw("{" + entry("a", "F32", "[4294967296,4294967296,16]", "[0,0]") + "}"),
        "tensor \"a\": shape [4294967296,4294967296,16] has more elements than fit in 63 bits");
    // 2^62 elements fit, 2^62 * 32 bits do not.
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[4611686018427387904]", "[0,0]") + "}"),
                   "shape [4611686018427387904] of F32 is more bytes than fit in 64 bits");
}

TEST_CASE("rejects: sub-byte tensor that is not a whole number of bytes") {
    CHECK_REJECTED(raw("{" + entry("a", "F4", "[3]", "[0,2]") + "}", "ab"),
                   "shape [3] of F4 is 12 bits, not a whole number of bytes");
}

TEST_CASE("rejects: byte size not matching shape x dtype") {
    CHECK_REJECTED(
        raw("{" + entry("a", "F32", "[2,3]", "[0,20]") + "}", std::string(20, '\0')),
        "tensor \"a\": shape [2, 3] of F32 is 24 bytes, but data_offsets [0, 20] hold 20");
    CHECK_REJECTED(raw("{" + entry("a", "BF16", "[3]", "[0,12]") + "}", std::string(12, '\0')),
                   "shape [3] of BF16 is 6 bytes, but data_offsets [0, 12] hold 12");
}

TEST_CASE("rejects: offsets out of order (begin > end)") {
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[1]", "[8,4]") + "}", std::string(8, '\0')),
                   "tensor \"a\": data_offsets [8, 4] are out of order: expected begin <= end");
}

TEST_CASE("rejects: offsets out of range") {
    CHECK_REJECTED(
        raw("{" + entry("a", "F32", "[1]", "[100,104]") + "}", f32_bytes({1})),
        "tensor \"a\": data_offsets [100, 104] end past the data (4 bytes after the header)");
    CHECK_REJECTED(
        raw("{" + entry("a", "F32", "[1]", "[18446744073709551612,18446744073709551616]") + "}",
            f32_bytes({1})),
        "data_offsets[1] (end) is not an integer");  // 2^64 does not fit: a float
    CHECK_REJECTED(
        raw("{" + entry("a", "F32", "[1]", "[18446744073709551612,18446744073709551615]") + "}",
            f32_bytes({1})),
        "end past the data");
}

TEST_CASE("rejects: truncated data") {
    const std::string whole = three_tensors();
    CHECK_REJECTED(
        whole.substr(0, whole.size() - 1),
        "tensor \"c\": data_offsets [30, 34] end past the data (33 bytes after the header): the "
        "file is truncated");
}

TEST_CASE("rejects: overlapping tensors") {
    const std::string header =
        "{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]") + "}";
    CHECK_REJECTED(raw(header, std::string(12, '\0')),
                   "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\" [0, 8]");
    // Two tensors on the same bytes.
    const std::string same =
        "{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("b", "F32", "[1]", "[0,4]") + "}";
    CHECK_REJECTED(raw(same, std::string(4, '\0')), "overlap tensor \"a\" [0, 4]");
}

TEST_CASE("rejects: holes between tensors or before the first") {
    const std::string header =
        "{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("b", "F32", "[1]", "[8,12]") + "}";
    CHECK_REJECTED(
        raw(header, std::string(12, '\0')),
        "tensor \"b\": data_offsets [8, 12] leave a hole of 4 bytes before it: expected begin 4 "
        "(where \"a\" ends)");
    CHECK_REJECTED(
        raw("{" + entry("a", "F32", "[1]", "[4,8]") + "}", std::string(8, '\0')),
        "leave a hole of 4 bytes before it: expected begin 0 (the first tensor starts the data)");
}

TEST_CASE("rejects: trailing bytes after the last tensor") {
    CHECK_REJECTED(raw("{" + entry("a", "F32", "[1]", "[0,4]") + "}", std::string(7, '\0')),
                   "3 trailing bytes after the last tensor \"a\": the data is 7 bytes but the "
                   "tensors end at 4");
    CHECK_REJECTED(raw("{}", "abc"), "3 trailing bytes after the last tensor: the data is 3 bytes");
}

TEST_CASE("rejects: __metadata__ that is not an object of strings") {
    CHECK_REJECTED(raw(R"({"__metadata__":["pt"]})"),
                   "\"__metadata__\" must be an object of strings, found array");
    CHECK_REJECTED(raw(R"({"__metadata__":{"format":1}})"),
                   "\"__metadata__\" value for \"format\" must be a string, found number");
}

TEST_CASE("rejects: paths that are not readable safetensors files") {
    const std::string dir = t::temp_dir();
    CHECK_THROWS_WITH_AS(SafetensorsFile::open(dir + "/missing.safetensors"),
                         doctest::Contains("missing.safetensors: cannot open: No such file"),
                         Error);
    CHECK_THROWS_WITH_AS(SafetensorsFile::open(dir), doctest::Contains(": not a regular file"),
                         Error);
    t::write_file(dir + "/empty.safetensors", "");
    CHECK_THROWS_WITH_AS(SafetensorsFile::open(dir + "/empty.safetensors"),
                         doctest::Contains("empty.safetensors: file is 0 bytes, shorter than"),
                         Error);
    t::write_file(dir + "/bad.safetensors", raw("{\"a\":"));
    CHECK_THROWS_WITH_AS(SafetensorsFile::open(dir + "/bad.safetensors"),
                         doctest::Contains("bad.safetensors: header is not valid JSON"), Error);
}

// A zip archive's first local file header, naming `entry` (stored, empty).
std::string zip_head(const std::string& entry) {
    std::string h("PK\x03\x04", 4);
    h += std::string(22, '\0');  // version, flags, method, time, date, crc, sizes
    h += char(entry.size() & 0xff);
    h += char(entry.size() >> 8);
    h += std::string(2, '\0');  // no extra field
    return h + entry + std::string(64, '\0');
}

TEST_CASE("rejects: files of other kinds are named, with what to do") {
    // Each of these, read as safetensors, has an absurd header length
    // (0x0403..., 'NUMPY' as a number): the message names the kind instead.
    const std::string dir = t::temp_dir();
    struct Case {
        std::string name, bytes;
        std::vector<std::string> needles;
    };
    const Case cases[] = {
        {"pytorch_model.bin",
         zip_head("archive/data.pkl"),
         {"pytorch_model.bin: a PyTorch checkpoint (torch.save's zip archive",
          "from safetensors.torch import save_file; save_file(torch.load(\"" + dir +
              "/pytorch_model.bin\", map_location=\"cpu\"), \"model.safetensors\")"}},
        {"legacy.bin",
         std::string("\x80\x02\x8a\x0a", 4) + std::string(28, '\x01'),
         {"legacy.bin: a Python pickle (a PyTorch checkpoint in torch.save's legacy format)",
          "safetensors.torch import save_file"}},
        {"w.npz",
         zip_head("gate.npy"),
         {"w.npz: a NumPy .npz archive, not safetensors",
          "from safetensors.numpy import save_file; save_file(dict(numpy.load(\"" + dir +
              "/w.npz\")), \"model.safetensors\")"}},
        {"w.npy",
         std::string("\x93NUMPY\x01\x00v\x00{'descr': '<f4'", 26),
         {"w.npy: a NumPy .npy array, not a checkpoint", "safetensors or GGUF"}},
        {"x.zip", zip_head("readme.txt"), {"x.zip: a zip archive, not safetensors or GGUF"}},
        {"lfs.safetensors",
         "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n",
         {"a Git LFS pointer, not the weights", "git lfs pull"}},
        {"k.h5",
         std::string("\x89HDF\r\n\x1a\n", 8) + std::string(32, '\0'),
         {"k.h5: an HDF5 file"}},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        t::write_file(dir + "/" + c.name, c.bytes);
        std::string message;
        try {
            SafetensorsFile::open(dir + "/" + c.name);
        } catch (const Error& e) {
            message = e.what();
            CHECK(e.status() == Status::invalid_argument);
        }
        INFO(message);
        for (const std::string& needle : c.needles) CHECK(contains(message, needle));
        CHECK(!contains(message, "header length"));
    }
    // From memory too (a GGUF's bytes, which a path would have opened as GGUF).
    CHECK_REJECTED(std::string("GGUF\x03\0\0\0", 8) + std::string(24, '\0'),
                   "a GGUF file, not safetensors");
    // A safetensors file whose 8-byte length happens to spell a magic's
    // start (640 = 0x0280: a pickle's PROTO 2) is read as safetensors: the
    // kinds are sniffed only where the bytes cannot be one.
    const std::string padded = "{}" + std::string(638, ' ');
    const std::string pickle_like = t::safetensors_raw(640, padded, "");
    REQUIRE(pickle_like.compare(0, 2, "\x80\x02") == 0);
    CHECK(SafetensorsFile::from_memory(pickle_like.data(), pickle_like.size()).tensors().empty());
}

TEST_CASE("hostile names stay printable in messages") {
    const std::string header = "{" + entry("bad\\u0001name", "F32", "[1]", "[0,8]") + "}";
    CHECK_REJECTED(raw(header, std::string(8, '\0')), "tensor \"bad\\u0001name\"");
}

TEST_CASE("no byte flip or truncation crashes the reader") {
    // Every single-byte corruption of a small valid file either opens (and
    // then reads in full) or throws swiglu::Error; under ASan/UBSan this is
    // the cheap fuzzer.
    const std::string good = three_tensors(R"({"k":"v"})");
    const unsigned char replacements[] = {0x00, 0x01, 0x7F, 0x80, 0xFF, '0', '9', '-', '{',
                                          '}',  '[',  ']',  '"',  ',',  ':', '.', 'e', ' '};
    int opened = 0, rejected = 0;
    auto attempt = [&](const std::string& bytes) {
        try {
            const SafetensorsFile file = open_bytes(bytes);
            for (const TensorInfo& info : file.tensors()) {
                try {
                    (void)file.to_f32(info);
                } catch (const Error& e) {
                    REQUIRE(e.status() == Status::unsupported);
                }
            }
            ++opened;
        } catch (const Error& e) {
            REQUIRE(e.status() == Status::invalid_argument);
            ++rejected;
        }
    };
    for (std::size_t i = 0; i < good.size(); ++i) {
        for (unsigned char r : replacements) {
            std::string bad = good;
            bad[i] = static_cast<char>(r);
            attempt(bad);
        }
    }
    for (std::size_t n = 0; n < good.size(); ++n) attempt(good.substr(0, n));
    MESSAGE("byte flips and truncations: " << opened << " opened, " << rejected << " rejected");
    CHECK(rejected > 0);
    CHECK(opened > 0);
}

}  // TEST_SUITE
