// The .npy reader and writer (see npy.hpp for the format and the rules).
#include "cli/npy.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include <unistd.h>

#include <swiglu/swiglu.hpp>

#include "common/mapped_file.hpp"
#include "common/messages.hpp"

// The data is copied as raw bytes into floats: only right on little-endian hosts.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the .npy code assumes a little-endian host");

namespace swiglu::detail {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;
// numpy writes headers of ~100 bytes (and its reader refuses more than
// 10000 by default); the cap bounds what a hostile length field can make a
// streamed read buffer before the header can even be parsed.
constexpr std::size_t kMaxHeaderLength = std::size_t{1} << 20;

[[noreturn]] void fail(const std::string& name, const std::string& message) {
    invalid(name + ": " + message);
}

// The header text as it can be shown in a one-line message: printable ASCII,
// the rest escaped, cut at 160 characters.
std::string printable(std::string_view text) {
    std::string out;
    for (char c : text.substr(0, 160)) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7F) {
            out += c;
        } else {
            static const char hex[] = "0123456789abcdef";
            out += c == '\n' ? std::string("\\n") : std::string("\\x") + hex[u >> 4] + hex[u & 15];
        }
    }
    if (text.size() > 160) out += "...";
    return out;
}

// ---------------------------------------------------------------------------
// The header dict: a small, strict parser of the Python literal numpy writes.
// It accepts what numpy.lib.format's reader accepts for our three keys (also
// Python 2's "3L" integers), and nothing that would need guessing.

struct Header {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::int64_t> shape;
};

class DictParser {
public:
    DictParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

    Header parse() {
        Header h;
        bool seen_descr = false, seen_fortran = false, seen_shape = false;
        skip_space();
        expect('{');
        skip_space();
        while (peek() != '}') {
            const std::string key = parse_string("a key");
            skip_space();
            expect(':');
            skip_space();
            if (key == "descr") {
                once(seen_descr, key);
                if (peek() != '\'' && peek() != '"')
                    error(
                        "'descr' must be a dtype string such as '<f4' (structured dtypes are not "
                        "supported)");
                h.descr = parse_string("the dtype");
            } else if (key == "fortran_order") {
                once(seen_fortran, key);
                h.fortran_order = parse_bool();
            } else if (key == "shape") {
                once(seen_shape, key);
                h.shape = parse_shape();
            } else {
                error("unexpected key '" + printable(key) +
                      "' (a .npy header has 'descr', 'fortran_order' and 'shape')");
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
                skip_space();
            } else if (peek() != '}') {
                error("expected ',' or '}'");
            }
        }
        ++pos_;  // '}'
        skip_space();
        if (pos_ != text_.size()) error("unexpected text after the closing '}'");
        if (!seen_descr) missing("descr");
        if (!seen_fortran) missing("fortran_order");
        if (!seen_shape) missing("shape");
        return h;
    }

private:
    [[noreturn]] void error(const std::string& what) const {
        fail(name_, "bad .npy header: " + what + " at offset " + std::to_string(pos_) + " in \"" +
                        printable(text_) + "\"");
    }
    [[noreturn]] void missing(const char* key) const {
        fail(name_,
             std::string("bad .npy header: no '") + key + "' key in \"" + printable(text_) + "\"");
    }
    void once(bool& seen, const std::string& key) const {
        if (seen) error("key '" + key + "' appears twice");
        seen = true;
    }

    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                       text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }
    void expect(char c) {
        if (peek() != c) error(std::string("expected '") + c + "'");
        ++pos_;
    }
    bool starts_with(std::string_view word) const {
        return text_.substr(pos_, word.size()) == word;
    }

    // A quoted Python string without escapes (no dtype or key needs one).
    std::string parse_string(const char* what) {
        const char quote = peek();
        if (quote != '\'' && quote != '"') error(std::string("expected ") + what + " in quotes");
        const std::size_t begin = ++pos_;
        while (pos_ < text_.size() && text_[pos_] != quote) {
            if (text_[pos_] == '\\') error("escapes in strings are not supported");
            ++pos_;
        }
        if (pos_ == text_.size()) error("unterminated string");
        return std::string(text_.substr(begin, pos_++ - begin));
    }

    bool parse_bool() {
        if (starts_with("True")) {
            pos_ += 4;
            return true;
        }
        if (starts_with("False")) {
            pos_ += 5;
            return false;
        }
        error("'fortran_order' must be True or False");
    }

    // A tuple of non-negative integers: (), (3,), (2, 3), (2, 3, ).
    std::vector<std::int64_t> parse_shape() {
        if (peek() != '(') error("'shape' must be a tuple such as (2, 3)");
        ++pos_;
        std::vector<std::int64_t> shape;
        bool trailing_comma = false;
        skip_space();
        while (peek() != ')') {
            shape.push_back(parse_dimension());
            skip_space();
            trailing_comma = peek() == ',';
            if (trailing_comma) {
                ++pos_;
                skip_space();
            } else if (peek() != ')') {
                error("expected ',' or ')' in 'shape'");
            }
        }
        // In Python "(3)" is the integer 3, not a tuple: numpy rejects it too.
        if (shape.size() == 1 && !trailing_comma) error("'shape' (n) is not a tuple (write (n,))");
        ++pos_;  // ')'
        return shape;
    }

    std::int64_t parse_dimension() {
        if (peek() == '-') error("negative dimension in 'shape'");
        if (peek() < '0' || peek() > '9') error("expected a non-negative integer in 'shape'");
        const std::size_t begin = pos_;
        std::int64_t value = 0;
        while (peek() >= '0' && peek() <= '9') {
            if (__builtin_mul_overflow(value, 10, &value) ||
                __builtin_add_overflow(value, peek() - '0', &value))
                error("dimension in 'shape' does not fit in 64 bits");
            ++pos_;
        }
        if (text_[begin] == '0' && pos_ - begin > 1)
            error("integer with a leading zero in 'shape'");
        if (peek() == 'L') ++pos_;  // Python 2 longs, as old numpy wrote them
        return value;
    }

    std::string_view text_;
    const std::string& name_;
    std::size_t pos_ = 0;
};

// Bytes of a float32 array of `shape`, or an error naming the file.
std::size_t data_bytes(const std::vector<std::int64_t>& shape, const std::string& name) {
    for (std::int64_t n : shape)
        if (n < 0) fail(name, "negative dimension in shape " + shape_string(shape));
    // A zero anywhere makes the array empty, however large the others are.
    for (std::int64_t n : shape)
        if (n == 0) return 0;
    std::int64_t elements = 1;
    for (std::int64_t n : shape) {
        if (__builtin_mul_overflow(elements, n, &elements))
            fail(name, "shape " + shape_string(shape) + " has more elements than fit in 64 bits");
    }
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(elements, std::int64_t{4}, &bytes))
        fail(name, "shape " + shape_string(shape) + " needs more bytes than fit in 64 bits");
    return static_cast<std::size_t>(bytes);
}

bool is_float32_le(const std::string& descr) {
    // numpy writes '<f4' on little-endian machines; '=' (native) and '|' (no
    // byte order) also mean little-endian float32 here (see the static_assert).
    return descr == "<f4" || descr == "=f4" || descr == "|f4";
}

}  // namespace

std::string shape_string(const std::vector<std::int64_t>& shape) {
    std::string out = "(";
    for (std::size_t i = 0; i < shape.size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + (shape.size() == 1 ? ",)" : ")");
}

namespace {

// Where the data starts and what it must be, from the preamble and header.
struct Layout {
    std::size_t data_offset = 0;
    std::vector<std::int64_t> shape;
    std::size_t data_bytes = 0;
};

// Checks the magic, version, header length and header dict of `bytes`.
// With `prefix`, `bytes` may be the start of a longer stream: nullopt then
// means "not enough bytes yet", and what is there is already checked (a bad
// magic fails at its first byte). Without, `bytes` is the whole file.
std::optional<Layout> parse_layout(std::string_view bytes, const std::string& name, bool prefix) {
    const std::string_view magic(kMagic, kMagicSize);
    const std::size_t seen = std::min(bytes.size(), kMagicSize);
    if (bytes.substr(0, seen) != magic.substr(0, seen) || (!prefix && bytes.size() < kMagicSize))
        fail(name, "not a .npy file (it does not start with the magic string \"\\x93NUMPY\")");
    if (bytes.size() < kMagicSize + 2) {
        if (prefix) return std::nullopt;
        fail(name, "truncated .npy file: " + std::to_string(bytes.size()) + " bytes, no version");
    }
    const auto major = static_cast<unsigned char>(bytes[6]);
    const auto minor = static_cast<unsigned char>(bytes[7]);
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        fail(name, "unsupported .npy format version " + std::to_string(major) + "." +
                       std::to_string(minor) + " (need 1.0, 2.0 or 3.0)");
    // Version 1.0 has a u16 header length, 2.0 and 3.0 a u32 (little-endian).
    const std::size_t length_size = major == 1 ? 2 : 4;
    const std::size_t preamble = kMagicSize + 2 + length_size;
    if (bytes.size() < preamble) {
        if (prefix) return std::nullopt;
        fail(name, "truncated .npy file: " + std::to_string(bytes.size()) +
                       " bytes, the header length is cut off");
    }
    std::size_t header_length = 0;
    for (std::size_t i = 0; i < length_size; ++i)
        header_length |= std::size_t{static_cast<unsigned char>(bytes[8 + i])} << (8 * i);
    const auto too_long = [&] {
        fail(name, "header length " + std::to_string(header_length) + " exceeds the limit of " +
                       std::to_string(kMaxHeaderLength) + " bytes (numpy writes ~100)");
    };
    if (header_length > bytes.size() - preamble) {
        if (!prefix)
            fail(name, "truncated .npy file: the header length " + std::to_string(header_length) +
                           " runs past the end of the file (" + std::to_string(bytes.size()) +
                           " bytes)");
        if (header_length > kMaxHeaderLength) too_long();
        return std::nullopt;
    }
    if (header_length > kMaxHeaderLength) too_long();

    const Header h = DictParser(bytes.substr(preamble, header_length), name).parse();
    if (!is_float32_le(h.descr))
        fail(name, "unsupported dtype '" + printable(h.descr) + "' (need float32 '<f4')");
    if (h.fortran_order)
        fail(name,
             "Fortran order not supported (save a C-order array: "
             "np.save(path, np.ascontiguousarray(a)))");
    return Layout{preamble + header_length, h.shape, data_bytes(h.shape, name)};
}

}  // namespace

NpyArray parse_npy(std::string_view bytes, const std::string& name) {
    const Layout layout = *parse_layout(bytes, name, /*prefix=*/false);
    const std::size_t need = layout.data_bytes;
    const std::size_t have = bytes.size() - layout.data_offset;
    if (have != need)
        fail(name, "data is " + std::to_string(have) + " bytes but shape " +
                       shape_string(layout.shape) + " of float32 needs " + std::to_string(need) +
                       " bytes" + (have < need ? " (file truncated?)" : " (trailing bytes)"));

    NpyArray out;
    out.shape = layout.shape;
    out.data.resize(need / 4);
    if (need) std::memcpy(out.data.data(), bytes.data() + layout.data_offset, need);
    return out;
}

NpyArray read_npy(const std::string& path) {
    MappedFile file(path);
    if (file.is_directory()) fail(path, "is a directory, not a .npy file");

    // A regular file is mapped (no second copy of a large input); anything
    // else (a pipe, a device, an empty or /proc file) is read as a stream,
    // checked as it arrives: reading stops at the first byte that is not
    // .npy and one byte past the end the header announces, so an endless
    // stream (/dev/zero, /dev/urandom, `yes |`) cannot grow the buffer
    // without bound.
    if (file.is_regular() && file.size() > 0 && file.map()) return parse_npy(file.bytes(), path);
    std::string bytes;
    std::optional<Layout> layout;
    char buffer[1 << 16];
    for (;;) {
        if (!layout) layout = parse_layout(bytes, path, /*prefix=*/true);
        if (layout && bytes.size() > layout->data_offset + layout->data_bytes)
            fail(path, "data continues past the " + std::to_string(layout->data_bytes) +
                           " bytes that shape " + shape_string(layout->shape) +
                           " of float32 needs (trailing bytes)");
        const ssize_t n = ::read(file.fd(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(path, std::string("cannot read: ") + std::strerror(errno));
        if (n == 0) break;
        bytes.append(buffer, static_cast<std::size_t>(n));
    }
    return parse_npy(bytes, path);
}

std::string npy_header_dict(const std::vector<std::int64_t>& shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
}

std::string npy_preamble(const std::string& dict) {
    // The header (dict, padding, '\n') makes the data start at a multiple of
    // 64 bytes, as numpy does, so a reader can map the data aligned.
    auto padded = [&](std::size_t preamble) {
        const std::size_t unpadded = preamble + dict.size() + 1;
        return dict + std::string((64 - unpadded % 64) % 64, ' ') + '\n';
    };
    std::string header = padded(10);
    unsigned char major = 1;
    if (header.size() > 0xFFFF) {
        header = padded(12);
        major = 2;
    }
    if (header.size() > 0xFFFFFFFFu)
        invalid("npy: header of " + std::to_string(header.size()) +
                " bytes does not fit a .npy file");
    std::string out(kMagic, kMagicSize);
    out += static_cast<char>(major);
    out += '\0';
    const std::size_t length_size = major == 1 ? 2 : 4;
    for (std::size_t i = 0; i < length_size; ++i)
        out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    return out + header;
}

std::string npy_bytes(const float* data, const std::vector<std::int64_t>& shape) {
    const std::size_t bytes = data_bytes(shape, "npy_bytes");
    if (bytes && !data) invalid("npy_bytes: data is null");
    std::string out = npy_preamble(npy_header_dict(shape));
    if (bytes) out.append(reinterpret_cast<const char*>(data), bytes);
    return out;
}

}  // namespace swiglu::detail
