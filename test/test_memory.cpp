// Bounded memory: beyond the packed weights (and the caller's x and y), a
// forward call's memory does not grow with the token count, since tokens run
// in chunks of 256 rows through scratch sized by the shape. And a block too
// large to allocate is refused with a clear error, before anything reads the
// caller's weights.
//
// Peak RSS is read from /proc/self/status (VmHWM), reset before each
// measurement by writing 5 to /proc/self/clear_refs (Linux >= 4.0). Under a
// sanitizer (shadow memory, quarantine) the figures are printed, not checked.
// bench/peak_rss.cpp prints the same figures for llama7b.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <swiglu/checkpoint.hpp>
#include <swiglu/swiglu.hpp>

#include "dtypes.hpp"
#include "process_memory.hpp"
#include "reference.hpp"
#include "safetensors_writer.hpp"

using namespace swiglu;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SWIGLU_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define SWIGLU_TEST_SANITIZED 1
#endif
#endif
#ifndef SWIGLU_TEST_SANITIZED
#define SWIGLU_TEST_SANITIZED 0
#endif

namespace {

using swiglu_memory::reset_peak;
using swiglu_memory::status_kib;

// How far RSS rose above its level at the start, at its peak during `f`, in KiB.
template <class F>
long peak_growth_kib(F&& f) {
    REQUIRE(reset_peak());
    const long before = status_kib("VmRSS");
    f();
    return status_kib("VmHWM") - before;
}

// `count` floats at the very end of a readable page followed by an
// inaccessible one: reading one float past them faults.
class GuardedFloats {
public:
    explicit GuardedFloats(std::size_t count) {
        page_ = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        REQUIRE(count * sizeof(float) <= page_);
        void* p =
            ::mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        base_ = static_cast<unsigned char*>(p);
        REQUIRE(::mprotect(base_ + page_, page_, PROT_NONE) == 0);
        data_ = reinterpret_cast<float*>(base_ + page_ - count * sizeof(float));
        for (std::size_t i = 0; i < count; ++i) data_[i] = 1.0f;
    }
    ~GuardedFloats() { ::munmap(base_, 2 * page_); }
    GuardedFloats(const GuardedFloats&) = delete;
    GuardedFloats& operator=(const GuardedFloats&) = delete;
    const float* data() const { return data_; }

private:
    std::size_t page_ = 0;
    unsigned char* base_ = nullptr;
    float* data_ = nullptr;
};

int overcommit_mode() {
    std::ifstream in("/proc/sys/vm/overcommit_memory");
    int mode = -1;
    in >> mode;
    return mode;
}

}  // namespace

TEST_SUITE("memory") {

TEST_CASE("peak RSS of forward does not grow with the token count") {
    if (!reset_peak()) {
        MESSAGE("skipped: /proc/self/clear_refs cannot reset the peak RSS on this kernel");
        return;
    }
    // Under a sanitizer nothing below is checked, only run: 640 tokens (two
    // full 256-row chunks and a partial one) take the same paths through the
    // chunk loop as 4096, in a sixth of the time (under ASan + UBSan the
    // 4096-token calls were 96 % of this suite's time).
    const std::int64_t d = 1024, f = 2816, many = SWIGLU_TEST_SANITIZED ? 640 : 4096;
    std::vector<float> x = test::random_input(many, d, 1);
    std::vector<float> y(x.size(), 0.0f);  // both touched: resident before any measurement
    const test::RandomBlock b(d, f, Layout::out_in, 2);
    const long act_per_token_kib = f * 4 / 1024;

    for (Dtype dtype : test::kDtypes) {
        CAPTURE(std::string(dtype_name(dtype)));
        long first_1 = 0, then_many = 0, first_many = 0;
        try {
            {
                const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2, dtype});
                // The first call makes the slot's scratch; with one token.
                first_1 = peak_growth_kib([&] { ffn.forward(x.data(), y.data(), 1); });
                // Then 4096 tokens through the same scratch: at most the
                // rest of one 256-row chunk's pages, touched for the first time.
                then_many = peak_growth_kib([&] { ffn.forward(x.data(), y.data(), many); });
            }
            {
                const Ffn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{2, dtype});
                // A first call with 4096 tokens makes the same scratch as one with 1.
                first_many = peak_growth_kib([&] { ffn.forward(x.data(), y.data(), many); });
            }
        } catch (const Error& e) {
            if (e.status() != Status::unsupported) throw;
            MESSAGE(std::string(dtype_name(dtype)), " skipped: ", e.what());
            continue;
        }
        MESSAGE(std::string(dtype_name(dtype)), ", d = ", d, ", f = ", f,
                ": peak RSS growth during forward: first call, 1 token ", first_1, " KiB; then ",
                many, " tokens ", then_many, " KiB; first call, ", many, " tokens ", first_many,
                " KiB (x and y, ", 2 * many * d * 4 / 1024, " KiB, resident before)");
        if (SWIGLU_TEST_SANITIZED) continue;
        // Scratch of a token count's size would be >= 4096 * f * 4 bytes (44
        // MiB here) for the act buffer alone; one chunk's is 256 rows (2.75
        // MiB). Allow 8 MiB: the chunk, huge pages, malloc arenas, oneDNN's
        // per-execution bookkeeping.
        const long slack_kib = 8 * 1024;
        CHECK(then_many <= slack_kib);
        CHECK(first_many <= first_1 + slack_kib);
        CHECK(first_many < many * act_per_token_kib / 2);
    }
    if (SWIGLU_TEST_SANITIZED) MESSAGE("sanitizer build: figures printed, not checked");
}

TEST_CASE("loading a BF16 checkpoint costs the packed weights and a tile, not an f32 copy") {
    if (!reset_peak()) {
        MESSAGE("skipped: /proc/self/clear_refs cannot reset the peak RSS on this kernel");
        return;
    }
    const std::int64_t d = 1024, f = 2816;
    std::string path;
    {
        const test::RandomBlock b(d, f, Layout::out_in, 3);
        const std::string p = "model.layers.0.mlp.";
        path = test::temp_dir() + "/bf16.safetensors";
        test::write_file(
            path, test::safetensors_bytes({{p + "gate_proj.weight", "BF16", {f, d}, b.gate},
                                           {p + "up_proj.weight", "BF16", {f, d}, b.up},
                                           {p + "down_proj.weight", "BF16", {d, f}, b.down}}));
    }
    const long packed_kib = 3 * d * f * 2 / 1024;
    // Once, unmeasured: what the first block of a process sets up for good
    // (oneDNN, the thread runtime) is no cost of loading.
    load_ffn(path, {}, Options{1, Dtype::bf16});
    long direct = 0, copied = 0;
    {
        std::unique_ptr<Ffn> ffn;
        direct = peak_growth_kib([&] {
            ffn = std::make_unique<Ffn>(load_ffn(path, {}, Options{1, Dtype::bf16}));
        });
    }
    {
        std::unique_ptr<Ffn> ffn;
        copied = peak_growth_kib([&] {
            const LoadedWeights w = load_weights(path);
            ffn = std::make_unique<Ffn>(w.gate_view(), w.up_view(), w.down_view(),
                                        Options{1, Dtype::bf16});
        });
    }
    MESSAGE("d = ", d, ", f = ", f, " BF16 -> bf16 (packed ", packed_kib,
            " KiB): peak RSS growth while loading ", direct, " KiB straight from the file, ",
            copied, " KiB through an f32 copy");
    // A plain f32 tile is at most 2 MiB here; 6 MiB more covers oneDNN's
    // primitives, the allocator and the file's readahead. The f32 copy alone
    // is 33 MiB. (The copy path's growth is only reported: memory earlier
    // tests freed to the allocator may absorb part of it.) Under a sanitizer
    // the quarantine keeps freed memory resident, so only printed (as the
    // file's top says): on the AVX-512 EPYC (bf16 on oneDNN's brgemm)
    // ASan's figure was 27.3 MiB, 20.4 without it.
    if (!SWIGLU_TEST_SANITIZED) CHECK(direct <= packed_kib + 8 * 1024);
}

TEST_CASE("a block too large to allocate fails with a clear error and reads nothing") {
    // One float behind each view; the views claim d = f = 2^20 (12 TiB of
    // packed f32 weights) and 2^22 (192 TiB: past the 47-bit address space;
    // 96 TiB in bf16, 48 TiB in int8).
    // Any read past the float faults, so the library must refuse before it
    // packs anything.
    const GuardedFloats one(1);
    struct Case {
        int log2;
        bool needs_overcommit_check;
    };
    for (const Case c : {Case{22, false}, Case{20, true}})
        for (Dtype dtype : test::kDtypes) {
            CAPTURE(c.log2);
            CAPTURE(std::string(dtype_name(dtype)));
            // With vm.overcommit_memory = 1 the kernel grants any address space
            // there is; only f32 at 2^22 (192 TiB) is then sure to fail.
            if ((c.needs_overcommit_check || dtype != Dtype::f32) && overcommit_mode() == 1) {
                MESSAGE("vm.overcommit_memory = 1: skipped");
                continue;
            }
            const std::int64_t n = std::int64_t{1} << c.log2;
            const WeightView w = WeightView::out_in(one.data(), n, n);
            const long rss_before = status_kib("VmRSS");
            const auto start = std::chrono::steady_clock::now();
            try {
                const Ffn ffn(w, w, w, Options{1, dtype});
                FAIL("a block of d = f = 2^", c.log2, " was constructed");
            } catch (const Error& e) {
                const std::string message = e.what();
                MESSAGE(std::string(dtype_name(dtype)), ", d = f = 2^", c.log2, ": ", message);
                if (e.status() == Status::unsupported)
                    continue;  // int8 without VNNI: refused first
                CHECK(e.status() == Status::out_of_memory);
                CHECK(message.find("cannot allocate") != std::string::npos);
                CHECK(message.find("bytes") != std::string::npos);
                CHECK(message.find('\n') == std::string::npos);
            }
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            CHECK(seconds < 10.0);  // refused up front, not after packing anything
            CHECK(status_kib("VmRSS") - rss_before < 64 * 1024);
        }
}

}  // TEST_SUITE
