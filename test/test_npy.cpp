// The .npy reader and writer: round trips, numpy's exact layout, every way
// a file can be malformed (each must be rejected with a message that names
// the file and the problem), and input that arrives as a stream (a pipe, a
// device).
#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include <swiglu/swiglu.hpp>

#include "cli/npy.hpp"
#include "error_checks.hpp"
#include "safetensors_writer.hpp"

using namespace swiglu;
using detail::npy_bytes;
using detail::npy_preamble;
using detail::NpyArray;
using detail::parse_npy;
using swiglu::test::expect_error;

namespace {

std::vector<float> iota(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 0.25f * static_cast<float>(i) - 3.0f;
    return v;
}

// A file with a hand-written header dict and `data_bytes` zero bytes of data.
std::string with_dict(const std::string& dict, std::size_t data_bytes) {
    return npy_preamble(dict) + std::string(data_bytes, '\0');
}

std::string f4_dict(const std::string& shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
}

// Parsing `bytes` must throw Error(invalid_argument) naming the file and
// containing `needle`.
void expect_rejected(const std::string& bytes, const std::string& needle) {
    try {
        (void)parse_npy(bytes, "bad.npy");
        FAIL("accepted; expected an error mentioning '" << needle << "'");
    } catch (const Error& e) {
        const std::string what = e.what();
        CAPTURE(what);
        CHECK(e.status() == Status::invalid_argument);
        CHECK(what.rfind("bad.npy: ", 0) == 0);
        CHECK(what.find(needle) != std::string::npos);
        CHECK(what.find('\n') == std::string::npos);
    }
}

void check_round_trip(const std::vector<std::int64_t>& shape) {
    std::size_t n = 1;
    for (auto s : shape) n *= static_cast<std::size_t>(s);
    const std::vector<float> values = iota(n);
    const std::string bytes = npy_bytes(values.data(), shape);
    CAPTURE(detail::shape_string(shape));
    // numpy aligns the data to 64 bytes; we do too.
    CHECK((bytes.size() - n * 4) % 64 == 0);
    const NpyArray back = parse_npy(bytes, "rt.npy");
    CHECK(back.shape == shape);
    CHECK(back.data == values);
    CHECK(back.elements() == static_cast<std::int64_t>(n));
}

}  // namespace

TEST_SUITE("npy") {

TEST_CASE("round trip of every rank, empty arrays included") {
    check_round_trip({});  // 0-D: one element
    check_round_trip({7});
    check_round_trip({1, 13});
    check_round_trip({2, 3, 13});
    check_round_trip({0, 13});
    check_round_trip({2, 0, 13});
    check_round_trip({1, 1, 1, 1, 5});
}

TEST_CASE("the writer produces exactly what numpy.save writes") {
    // np.save(f, np.zeros((2, 3), np.float32)): 10 preamble bytes, a header
    // of 118 (dict, spaces, '\n') so the data starts at 128.
    const std::vector<float> zeros(6, 0.0f);
    const std::string bytes = npy_bytes(zeros.data(), {2, 3});
    REQUIRE(bytes.size() == 128 + 24);
    CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    CHECK(static_cast<unsigned char>(bytes[8]) == 118);
    CHECK(bytes[9] == 0);
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    CHECK(bytes.substr(10, dict.size()) == dict);
    CHECK(bytes.substr(10 + dict.size(), 117 - dict.size()) == std::string(117 - dict.size(), ' '));
    CHECK(bytes[127] == '\n');
    CHECK(detail::npy_header_dict({5}) ==
          "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }");
    CHECK(detail::npy_header_dict({}) == "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
}

TEST_CASE("headers numpy or other writers may produce are accepted") {
    // Version 2.0 and 3.0: a u32 header length.
    for (char major : {'\x02', '\x03'}) {
        const std::string dict = f4_dict("(2,)") + "\n";
        std::string bytes = std::string("\x93NUMPY", 6) + major + '\0';
        const auto len = static_cast<std::uint32_t>(dict.size());
        for (int i = 0; i < 4; ++i) bytes += static_cast<char>((len >> (8 * i)) & 0xFF);
        bytes += dict + std::string(8, '\0');
        const NpyArray a = parse_npy(bytes, "v2.npy");
        CHECK(a.shape == std::vector<std::int64_t>{2});
    }
    // Other key orders, quotes, spacing, no trailing comma, Python 2 longs,
    // native and no byte order marks.
    for (const char* dict : {"{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
                             "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",
                             "  {'descr':'=f4','fortran_order':False,'shape':(2L, 3L),}  ",
                             "{'descr': '|f4', 'fortran_order': False, 'shape': (2, 3, ), }"}) {
        CAPTURE(dict);
        const NpyArray a = parse_npy(with_dict(dict, 24), "ok.npy");
        CHECK(a.shape == std::vector<std::int64_t>{2, 3});
    }
}

TEST_CASE("values survive bit for bit, NaN and infinities included") {
    const std::vector<float> v = {0.0f, -0.0f, 1e-45f, 3.4e38f, -INFINITY, INFINITY, NAN};
    const NpyArray a = parse_npy(npy_bytes(v.data(), {7}), "bits.npy");
    REQUIRE(a.data.size() == v.size());
    CHECK(std::memcmp(a.data.data(), v.data(), v.size() * 4) == 0);
}

TEST_CASE("read_npy reads a file and names it in errors") {
    const std::string dir = test::temp_dir();
    const std::vector<float> v = iota(2 * 5);
    test::write_file(dir + "/x.npy", npy_bytes(v.data(), {2, 5}));
    const NpyArray a = detail::read_npy(dir + "/x.npy");
    CHECK(a.shape == std::vector<std::int64_t>{2, 5});
    CHECK(a.data == v);

    test::write_file(dir + "/empty.npy", "");
    auto read_error = [](const std::string& path) -> std::string {
        try {
            (void)detail::read_npy(path);
        } catch (const Error& e) {
            CHECK(e.status() == Status::invalid_argument);
            return e.what();
        }
        return "(no error)";
    };
    CHECK(read_error(dir + "/empty.npy") == dir +
                                                "/empty.npy: not a .npy file (it does not start "
                                                "with the magic string \"\\x93NUMPY\")");
    CHECK(read_error(dir + "/missing.npy") ==
          dir + "/missing.npy: cannot open: No such file or directory");
    CHECK(read_error(dir) == dir + ": is a directory, not a .npy file");
}

TEST_CASE("a wrong preamble is rejected") {
    const std::string good = npy_bytes(iota(4).data(), {4});
    expect_rejected("", "not a .npy file");
    expect_rejected("\x93NUM", "not a .npy file");
    expect_rejected("PK\x03\x04 a zip file, say", "not a .npy file");
    std::string bad_magic = good;
    bad_magic[1] = 'n';
    expect_rejected(bad_magic, "not a .npy file");

    expect_rejected(good.substr(0, 7), "truncated");
    for (auto [major, minor] : {std::pair{0, 0}, {4, 0}, {1, 1}, {2, 5}, {255, 0}}) {
        std::string bad = good;
        bad[6] = static_cast<char>(major);
        bad[7] = static_cast<char>(minor);
        expect_rejected(bad, "unsupported .npy format version " + std::to_string(major) + "." +
                                 std::to_string(minor));
    }
    expect_rejected(good.substr(0, 9), "the header length is cut off");
    // Version 2.0 needs four length bytes.
    expect_rejected(std::string("\x93NUMPY\x02\x00\x10\x00", 10), "the header length is cut off");
}

TEST_CASE("a header that runs past the end of the file is rejected") {
    const std::string good = npy_bytes(iota(4).data(), {4});
    // Cut inside the header: the declared length runs past the end.
    expect_rejected(good.substr(0, 40), "runs past the end of the file (40 bytes)");
    std::string huge = good;
    huge[8] = '\xff';
    huge[9] = '\xff';
    expect_rejected(huge.substr(0, 64 + 16), "header length 65535 runs past the end");
    expect_rejected(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14),
                    "header length 4294967295 runs past the end");
}

TEST_CASE("bad dict syntax is rejected") {
    const struct {
        const char* dict;
        const char* needle;
    } cases[] = {
        {"", "expected '{'"},
        {"'descr': '<f4'", "expected '{'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "expected ',' or '}'"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}", "expected ':'"},
        {"{descr: '<f4', 'fortran_order': False, 'shape': (2, 3)}", "expected a key in quotes"},
        {"{'descr: '<f4', 'fortran_order': False, 'shape': (2, 3)}", "expected ':'"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}", "expected ',' or '}'"},
        {"{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3)}", "must be True or False"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", "must be True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", "must be a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ',' or ')'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3)}", "non-negative integer"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", "is not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x", "unexpected text after"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}}", "unexpected text after"},
        {"{'descr': '<f4', 'fortran_order': False}", "no 'shape' key"},
        {"{'fortran_order': False, 'shape': (2, 3)}", "no 'descr' key"},
        {"{'descr': '<f4', 'shape': (2, 3)}", "no 'fortran_order' key"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
         "'descr' appears twice"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}",
         "unexpected key 'extra'"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3)}", "structured dtypes"},
        {"{'descr': '<\\f4', 'fortran_order': False, 'shape': (2, 3)}", "escapes"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.dict);
        expect_rejected(with_dict(c.dict, 24), c.needle);
    }
    // Binary garbage in the header is shown escaped, on one line.
    expect_rejected(with_dict(std::string("{\x01\x02\n'", 5), 24), "\\x01\\x02\\n");
}

TEST_CASE("a dtype other than little-endian float32 is rejected") {
    for (const char* descr : {"<f8", ">f4", "<i4", "<f2", "|u1", "f4", "<c8", "O"}) {
        CAPTURE(descr);
        const std::string dict =
            std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2, 3), }";
        expect_rejected(with_dict(dict, 24),
                        std::string("unsupported dtype '") + descr + "' (need float32 '<f4')");
    }
}

TEST_CASE("Fortran order is rejected") {
    expect_rejected(with_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24),
                    "Fortran order not supported");
}

TEST_CASE("negative, garbage and overflowing shapes are rejected") {
    expect_rejected(with_dict(f4_dict("(-1, 3)"), 0), "negative dimension");
    expect_rejected(with_dict(f4_dict("(2, -3)"), 0), "negative dimension");
    expect_rejected(with_dict(f4_dict("(2, x)"), 24), "non-negative integer");
    expect_rejected(with_dict(f4_dict("(2.5, 3)"), 24), "expected ',' or ')'");
    expect_rejected(with_dict(f4_dict("(+2, 3)"), 24), "non-negative integer");
    expect_rejected(with_dict(f4_dict("(02, 3)"), 24), "leading zero");
    expect_rejected(with_dict(f4_dict("(None,)"), 24), "non-negative integer");
    // One dimension past 2^63 - 1.
    expect_rejected(with_dict(f4_dict("(9223372036854775808,)"), 24), "does not fit in 64 bits");
    // Each fits, the product does not.
    expect_rejected(with_dict(f4_dict("(4294967296, 4294967296)"), 24),
                    "more elements than fit in 64 bits");
    // The elements fit, their bytes (x 4) do not.
    expect_rejected(with_dict(f4_dict("(4611686018427387904,)"), 24),
                    "more bytes than fit in 64 bits");
    // A zero dimension makes the array empty whatever the others are.
    const NpyArray empty = parse_npy(with_dict(f4_dict("(0, 9223372036854775807)"), 0), "z.npy");
    CHECK(empty.elements() == 0);
}

TEST_CASE("data shorter or longer than the shape says is rejected") {
    const std::string good = npy_bytes(iota(6).data(), {2, 3});
    expect_rejected(
        good.substr(0, good.size() - 1),
        "data is 23 bytes but shape (2, 3) of float32 needs 24 bytes (file truncated?)");
    expect_rejected(good.substr(0, good.size() - 24), "data is 0 bytes but shape (2, 3)");
    expect_rejected(good + '\0',
                    "data is 25 bytes but shape (2, 3) of float32 needs 24 bytes (trailing bytes)");
    expect_rejected(good + std::string(24, '\0'), "data is 48 bytes");
    // A lying shape on an empty array.
    expect_rejected(with_dict(f4_dict("(0, 3)"), 4), "data is 4 bytes but shape (0, 3)");
}

TEST_CASE("the writer rejects shapes it cannot write") {
    const float x = 1.0f;
    CHECK_THROWS_WITH_AS(npy_bytes(&x, {-1}), doctest::Contains("negative dimension"), Error);
    CHECK_THROWS_WITH_AS(npy_bytes(nullptr, {2}), doctest::Contains("data is null"), Error);
    CHECK(npy_bytes(nullptr, {0, 4}).size() == 128);  // an empty array needs no data
}

TEST_CASE("a streamed input is checked as it arrives and never buffered without bound") {
    // /dev/zero: refused at the first byte.
    expect_error([] { (void)detail::read_npy("/dev/zero"); }, Status::invalid_argument,
                 {"/dev/zero", "not a .npy file"});

    // A pipe: a valid (2, 3) array, then data that never ends. The reader
    // stops one byte past the announced 24 bytes; the writer then fails
    // with EPIPE and stops.
    const std::vector<float> values = {1, 2, 3, 4, 5, 6};
    const std::string good = detail::npy_bytes(values.data(), {2, 3});
    auto through_pipe = [&](const std::string& head, bool endless) {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        std::thread writer([&, fd = fds[1]] {
            // EPIPE instead of a signal once the reader is gone: SIGPIPE is
            // sent to the writing thread, where it stays pending, blocked.
            sigset_t pipe_signal;
            sigemptyset(&pipe_signal);
            sigaddset(&pipe_signal, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
            std::size_t sent = 0;
            while (sent < head.size()) {
                const ssize_t n = ::write(fd, head.data() + sent, head.size() - sent);
                if (n <= 0) break;
                sent += static_cast<std::size_t>(n);
            }
            const std::string filler(1 << 16, 'y');
            while (endless && sent == head.size() &&
                   ::write(fd, filler.data(), filler.size()) > 0) {}
            ::close(fd);
        });
        const std::string path = "/dev/fd/" + std::to_string(fds[0]);
        std::string error;
        detail::NpyArray out;
        try {
            out = detail::read_npy(path);
        } catch (const Error& e) {
            error = e.what();
        }
        ::close(fds[0]);
        writer.join();
        return std::make_pair(out, error);
    };
    auto [array, error] = through_pipe(good, false);
    CHECK(error.empty());
    CHECK(array.shape == std::vector<std::int64_t>{2, 3});
    CHECK(array.data == values);
    std::tie(array, error) = through_pipe(good, true);
    CHECK(error.find("data continues past the 24 bytes") != std::string::npos);
    // A header length the limit refuses before any of it is read.
    std::tie(array, error) =
        through_pipe(std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12), true);
    CHECK(error.find("exceeds the limit") != std::string::npos);
}

}  // TEST_SUITE
