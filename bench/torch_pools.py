"""Other thread pools in the process (issue 44): a swiglu.torch block called
right after a torch call, and a torch call right after the block, against
each alone, on 1 and 2 threads (torch.set_num_threads(n) and the block's
threads, which follow it by default).

A model mixes them: torch's attention, then our MLP, then torch again.
Whatever a pool's workers do once their call returns (spin, yield, sleep)
lands on the next call's cores. Debian's torch 1.13 has three pools: its
own OpenMP team (libgomp, the elementwise ops; its wait policy is read when
libgomp loads, at `import torch`), OpenBLAS's pthread workers (F.linear's
sgemm, where libopenblas0-pthread provides libblas.so.3; as many as cores,
whatever torch.set_num_threads says) and ours.

The cyber block (d = 384, f = 1024), 512 tokens, the seed's
SwiGLUFeedForward for torch. Each round times every case, back to back
calls, interleaved; the figure is the median over rounds of each round's
median call. Each environment runs in a fresh process (libgomp and OpenBLAS
read theirs at load):

    PYTHONPATH=build/python flock -x /tmp/cpu.lock /usr/bin/python3 bench/torch_pools.py [--rounds N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# What the user can set before starting Python, and what each changes.
# OPENBLAS_THREAD_TIMEOUT=4: OpenBLAS's workers wait 2^4 cycles, not 2^28,
# before they sleep.
ENVIRONMENTS = (
    ("default", {}),
    ("OPENBLAS_NUM_THREADS=1", {"OPENBLAS_NUM_THREADS": "1"}),
    ("OPENBLAS_THREAD_TIMEOUT=4", {"OPENBLAS_THREAD_TIMEOUT": "4"}),
    ("OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"}),
    ("TIMEOUT=4 + PASSIVE", {"OPENBLAS_THREAD_TIMEOUT": "4", "OMP_WAIT_POLICY": "PASSIVE"}),
)
OURS = ("OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
# Long enough for every pool to have gone to sleep (OpenBLAS's workers wait
# ~2^28 cycles, measured ~0.12 s of CPU here): "alone" means alone.
QUIET = 0.3
CASES = ("ours alone", "torch alone", "ours after torch", "torch after ours")


def child(rounds, calls):
    # Here, not at the top: the parent process never loads torch's pools.
    import torch
    from python_vs_torch import SwiGLUFeedForward  # the seed's module, beside this file

    from swiglu.torch import SwiGLU

    torch.manual_seed(0)
    seed = SwiGLUFeedForward(384, 1024)
    x = torch.randn(512, 384)
    results = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        ours = SwiGLU.from_module(seed)  # threads: torch's count

        def timed(first, second):
            # second's call, `calls` times, each right after first's (or alone).
            times = []
            for _ in range(calls):
                if first is not None:
                    first(x)
                start = time.perf_counter()
                second(x)
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        pairs = {"ours alone": (None, ours), "torch alone": (None, seed),
                 "ours after torch": (seed, ours), "torch after ours": (ours, seed)}
        with torch.inference_mode():
            for first, second in pairs.values():
                timed(first, second)  # warm: primitives, scratch, pools
            per_round = {case: [] for case in CASES}
            for _ in range(rounds):
                for case in CASES:
                    time.sleep(QUIET)
                    per_round[case].append(timed(*pairs[case]))
        results[threads] = {
            "block threads": ours.ffn.threads,
            **{case: statistics.median(v) * 1e3 for case, v in per_round.items()}}
    print(json.dumps(results))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.rounds, args.calls)
        return
    print("cyber d=384 f=1024, 512 tokens, ms per call (median of %d rounds x %d calls)"
          % (args.rounds, args.calls))
    print("%-26s %3s  %s" % ("environment", "thr", "  ".join("%16s" % c for c in CASES)))
    for name, extra in ENVIRONMENTS:
        env = {k: v for k, v in os.environ.items() if k not in OURS}
        env.update(extra)
        out = subprocess.run([sys.executable, __file__, "--child", "--rounds", str(args.rounds),
                              "--calls", str(args.calls)],
                             env=env, check=True, capture_output=True, text=True).stdout
        for threads, r in json.loads(out.strip().splitlines()[-1]).items():
            assert r["block threads"] == int(threads), r
            print("%-26s %3s  %s" % (name, threads, "  ".join("%16.2f" % r[c] for c in CASES)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
