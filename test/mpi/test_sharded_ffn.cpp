// ShardedFfn under mpirun: every rank's y equal to the fp64 reference
// within the f32 bound (odd f, f smaller than the rank count, both layouts,
// token counts across chunks), the same bits on every rank and for any
// thread count, the shard ranges, and errors on one rank reaching all.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <swiglu/mpi.hpp>

#include "mpi_support.hpp"
#include "reference.hpp"

using namespace swiglu;
using swiglu::test::RandomBlock;
using swiglu::test::same_on_every_rank;
using swiglu::test::world_rank;
using swiglu::test::world_size;

TEST_SUITE("mpi") {

TEST_CASE("shard ranges cover f in order, on 64- or 32-column boundaries where f allows") {
    for (std::int64_t f : {1, 2, 7, 64, 100, 128, 341, 1024, 11008})
        for (int p : {1, 2, 3, 4, 7}) {
            std::int64_t next = 0;
            for (int r = 0; r < p; ++r) {
                const ShardRange s = shard_range(f, r, p);
                CHECK(s.begin == next);
                CHECK(s.end >= s.begin);
                next = s.end;
                if (f >= 64 * p && r > 0) CHECK(s.begin % 64 == 0);
                if (f >= 32 * p && r > 0) CHECK(s.begin % 32 == 0);
            }
            CHECK(next == f);
        }
    CHECK_THROWS_AS(shard_range(8, 2, 2), Error);
}

TEST_CASE("blocks of 256 (the K-quants) are never cut, even where a rank then holds none") {
    for (std::int64_t f : {1, 100, 256, 512, 768, 1000, 11008})
        for (int p : {1, 2, 3, 4, 7}) {
            std::int64_t next = 0;
            for (int r = 0; r < p; ++r) {
                const ShardRange s = shard_range(f, r, p, 256);
                CHECK(s.begin == next);
                CHECK(s.end >= s.begin);
                CHECK((s.end % 256 == 0 || s.end == f));
                next = s.end;
            }
            CHECK(next == f);
        }
    // Blocks of 32 or less: as the three-argument form.
    for (int r = 0; r < 3; ++r) {
        CHECK(shard_range(341, r, 3, 32).begin == shard_range(341, r, 3).begin);
        CHECK(shard_range(341, r, 3, 1).end == shard_range(341, r, 3).end);
    }
    CHECK_THROWS_AS(shard_range(8, 0, 2, 0), Error);
}

TEST_CASE("every rank gets the block's y: the fp64 reference within the f32 bound") {
    struct Shape {
        std::int64_t d, f;
    };
    for (const Shape s : {Shape{1, 1}, Shape{7, 2}, Shape{13, 7}, Shape{33, 341}, Shape{96, 200}})
        for (const Layout layout : {Layout::out_in, Layout::in_out})
            for (const std::int64_t tokens : {1, 7, 300}) {
                CAPTURE(s.d);
                CAPTURE(s.f);
                CAPTURE(tokens);
                RandomBlock b(s.d, s.f, layout, static_cast<unsigned>(s.d + 3 * s.f));
                const ShardedFfn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{1});
                CHECK(ffn.ranks() == world_size());
                const auto x = test::random_input(tokens, s.d, 5);
                std::vector<float> y(x.size(), -1.0f);
                ffn.forward(x.data(), y.data(), tokens);
                const auto ref = test::reference_ffn(x.data(), tokens, b.gate_view(), b.up_view(),
                                                     b.down_view());
                CHECK(test::relative_error(y, ref) <= test::f32_tolerance(s.d, s.f));
                CHECK(same_on_every_rank(y));
                // In place, and again: the same bits.
                std::vector<float> again(x);
                ffn.forward(again.data(), again.data(), tokens);
                CHECK(again == y);
            }
}

TEST_CASE("the same bits for any thread count per rank") {
    RandomBlock b(64, 300, Layout::out_in, 9);
    const auto x = test::random_input(40, 64, 10);
    std::vector<float> one(x.size()), two(x.size());
    ShardedFfn(b.gate_view(), b.up_view(), b.down_view(), Options{1})
        .forward(x.data(), one.data(), 40);
    ShardedFfn(b.gate_view(), b.up_view(), b.down_view(), Options{2})
        .forward(x.data(), two.data(), 40);
    CHECK(one == two);
}

TEST_CASE("a rank's bad weights or bad call fail on every rank, named") {
    RandomBlock b(16, 40, Layout::out_in, 11);
    const int last = world_size() - 1;
    WeightView gate = b.gate_view();
    if (world_rank() == last) gate.data = nullptr;
    try {
        ShardedFfn ffn(gate, b.up_view(), b.down_view(), Options{1});
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.status() == Status::invalid_argument);
        CHECK(std::string(e.what()).find("rank " + std::to_string(last) + ": ") == 0);
    }
    const ShardedFfn ffn(b.gate_view(), b.up_view(), b.down_view(), Options{1});
    const auto x = test::random_input(4, 16, 12);
    std::vector<float> y(x.size(), 7.0f);
    // Token counts that differ between ranks.
    const std::int64_t tokens = world_rank() == last && last > 0 ? 3 : 4;
    CHECK_THROWS_WITH_AS(ffn.forward(x.data(), y.data(), tokens),
                         doctest::Contains("same token count"), Error);
    CHECK(y == std::vector<float>(y.size(), 7.0f));
    // A null buffer on one rank.
    CHECK_THROWS_AS(ffn.forward(x.data(), world_rank() == last ? nullptr : y.data(), 4), Error);
    CHECK(y == std::vector<float>(y.size(), 7.0f));
}

}  // TEST_SUITE
