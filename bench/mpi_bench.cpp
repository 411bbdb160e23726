// swiglu_mpi_bench: a block sharded over P ranks of 1 thread each against
// one process with P threads, in one run, interleaved round by round:
//
//   mpirun --bind-to none -n 2 build/bench/swiglu_mpi_bench [--shape llama7b] [--rounds 5]
//   mpirun --bind-to none -n 2 build/bench/swiglu_mpi_bench --moe PATH --layer N
//
// (--moe: a checkpoint's Mixture-of-Experts layer, ShardedMoeLayer, experts
// spread over the ranks, against load_moe_layer with P threads.)
//
// (--bind-to none: Open MPI binds each of 2 ranks to one core by default,
// and the single process's P threads would then share that core: measured
// 1.7-1.85x "faster" sharded for that reason alone.)
//
// Each round times ShardedFfn::forward on every rank (1 thread each), then
// rank 0 alone times an Ffn with P threads while the other ranks wait
// without spinning (they poll a nonblocking barrier and sleep). Printed per
// token count: the medians, their ratio, and the collective's share of the
// sharded call. Hold `flock -x /tmp/cpu.lock`.
#include <mpi.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <swiglu/moe_checkpoint.hpp>
#include <swiglu/mpi.hpp>

#include "shapes.hpp"
#include "weights.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Waits for every rank without keeping a core busy (Open MPI's blocking
// calls poll).
void quiet_barrier() {
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    for (int done = 0; !done;) {
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (!done) {
            const timespec pause{0, 200000};  // 0.2 ms
            nanosleep(&pause, nullptr);
        }
    }
}

// Rank 0's single process needs `ranks` cores: say so where mpirun bound it to fewer.
void warn_if_bound(int rank, int ranks) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (rank == 0 && sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < ranks)
        std::fprintf(stderr,
                     "swiglu_mpi_bench: rank 0 may run on %d core(s), fewer than its %d threads: "
                     "run under mpirun --bind-to none\n",
                     CPU_COUNT(&cpus), ranks);
}

// Per token count, `rounds` interleaved rounds: sharded.forward on every
// rank, then single->forward on rank 0 alone (single: null elsewhere) while
// the others wait quietly. A ShardedFfn against an Ffn, or a
// ShardedMoeLayer against a MoeLayer.
template <class Sharded, class Single>
void run_rows(int rank, std::int64_t d, int rounds, const Sharded& sharded, const Single* single) {
    const bool has_single = single != nullptr;
    for (const std::int64_t tokens : {std::int64_t{1}, std::int64_t{16}, std::int64_t{512}}) {
        const auto x = swiglu_bench::make_input(tokens, d, 7);
        std::vector<float> y(x.size()), y_single(x.size());
        std::vector<double> t_sharded, t_single, share;
        sharded.forward(x.data(), y.data(), tokens);  // warm
        if (has_single) single->forward(x.data(), y_single.data(), tokens);
        const int calls = tokens >= 512 ? 1 : tokens >= 16 ? 5 : 20;
        for (int r = 0; r < rounds; ++r) {
            MPI_Barrier(MPI_COMM_WORLD);
            auto t0 = Clock::now();
            double collective = 0;
            for (int c = 0; c < calls; ++c) {
                sharded.forward(x.data(), y.data(), tokens);
                collective += sharded.last_collective_seconds();
            }
            const double ts = std::chrono::duration<double>(Clock::now() - t0).count() / calls;
            t_sharded.push_back(ts);
            share.push_back(collective / calls / ts);
            quiet_barrier();
            if (has_single) {
                t0 = Clock::now();
                for (int c = 0; c < calls; ++c) single->forward(x.data(), y_single.data(), tokens);
                t_single.push_back(std::chrono::duration<double>(Clock::now() - t0).count() /
                                   calls);
            }
            quiet_barrier();
        }
        if (rank == 0) {
            double diff = 0, scale = 0;
            for (std::size_t i = 0; i < y.size(); ++i) {
                diff = std::max(diff, double(std::abs(y[i] - y_single[i])));
                scale = std::max(scale, double(std::abs(y_single[i])));
            }
            const double ms = median(t_sharded) * 1e3, ms1 = median(t_single) * 1e3;
            std::printf("%6lld %14.3f %14.3f %8.2fx %13.1f%%   (max |diff| / max |y| %.1e)\n",
                        (long long)tokens, ms, ms1, ms1 / ms, 100 * median(share),
                        scale > 0 ? diff / scale : 0.0);
            std::fflush(stdout);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    std::string shape_name = "llama7b", moe_path;
    int rounds = 5;
    std::int64_t layer = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--shape")) shape_name = argv[i + 1];
        if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--moe")) moe_path = argv[i + 1];
        if (!std::strcmp(argv[i], "--layer")) layer = std::atoll(argv[i + 1]);
    }
    if (!moe_path.empty()) {
        // Experts over the ranks against one process of P threads.
        const swiglu::ShardedMoeLayer sharded(moe_path, layer, swiglu::Options{1});
        std::unique_ptr<swiglu::MoeLayer> single;
        if (rank == 0)
            single = std::make_unique<swiglu::MoeLayer>(
                swiglu::load_moe_layer(moe_path, layer, swiglu::Options{ranks}));
        warn_if_bound(rank, ranks);
        if (rank == 0)
            std::printf(
                "MoE layer %lld of %s (d=%lld, E=%lld, k=%lld, f=%lld): %d ranks x 1 thread vs 1 "
                "process x %d threads\n%6s %14s %14s %9s %14s\n",
                (long long)layer, moe_path.c_str(), (long long)sharded.d(),
                (long long)sharded.experts(), (long long)sharded.local().rule().top_k,
                (long long)sharded.local().experts().f(), ranks, ranks, "tokens", "sharded ms",
                "threads ms", "ratio", "collective %");
        run_rows(rank, sharded.d(), rounds, sharded, single.get());
        MPI_Finalize();
        return 0;
    }
    const swiglu_bench::Shape* shape = nullptr;
    for (const auto& s : swiglu_bench::all_shapes())
        if (shape_name == s.name) shape = &s;
    if (!shape) {
        if (rank == 0)
            std::fprintf(stderr, "swiglu_mpi_bench: unknown shape %s\n", shape_name.c_str());
        MPI_Finalize();
        return 2;
    }
    const std::int64_t d = shape->d, f = shape->f;
    const auto w = swiglu_bench::make_weights(*shape);
    const swiglu::WeightView gate = swiglu::WeightView::out_in(w->gate.get(), f, d),
                             up = swiglu::WeightView::out_in(w->up.get(), f, d),
                             down = swiglu::WeightView::out_in(w->down.get(), d, f);
    const swiglu::ShardedFfn sharded(gate, up, down, swiglu::Options{1});
    std::unique_ptr<swiglu::Ffn> single;
    if (rank == 0) single = std::make_unique<swiglu::Ffn>(gate, up, down, swiglu::Options{ranks});
    warn_if_bound(rank, ranks);
    if (rank == 0)
        std::printf(
            "%s (d=%lld, f=%lld): %d ranks x 1 thread vs 1 process x %d threads\n"
            "%6s %14s %14s %9s %14s\n",
            shape->name, (long long)d, (long long)f, ranks, ranks, "tokens", "sharded ms",
            "threads ms", "ratio", "collective %");
    run_rows(rank, d, rounds, sharded, single.get());
    MPI_Finalize();
    return 0;
}
