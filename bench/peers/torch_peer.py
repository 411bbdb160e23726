#!/usr/bin/env python3
"""The SwiGLU block in PyTorch and in swiglu's Python binding, in ONE process,
on the same weights and the same x, timed in alternating batches
(bench/peers/README.md, "torch, in one process").

torch runs the block as its users write it, weights (out, in) as nn.Linear
keeps them:

    with torch.inference_mode():
        y = F.linear(F.silu(F.linear(x, Wg)) * F.linear(x, Wu), Wd)

ours is `swiglu.Ffn(Wg, Wu, Wd, dtype=..., threads=T).forward(x, out=y)` on
torch tensors (no copies). For bf16 rows torch gets x and the weights in
bfloat16; ours gets the same bf16-rounded weights (packed as bf16) and x
as float32 holding the same values.

    PYTHONPATH=build/python /usr/bin/python3 bench/peers/torch_peer.py \
        [--shapes cyber,llama7b] [--dtypes f32,bf16] [--tokens 1,512] [--threads 2] \
        [--tsv FILE] [--min-batch-s 0.05] [--allow-reference-blas]

Batches of ours and torch's alternate 200 ms apart (--pause-ms): after
torch's float32 call OpenBLAS's idle workers spin for ~0.1 s on the cores
ours needs; a shorter pause measures that interference (issue 44), not the
block. Hold `flock -x /tmp/cpu.lock` around it on a shared machine. Exit status 1
when a row's outputs disagree, 3 when torch's float32 runs on the netlib
reference BLAS (unless --allow-reference-blas).
"""

import argparse
import ctypes
import os
import resource
import statistics
import subprocess
import sys
import time

SHAPES = {"glass": (128, 341), "cyber": (384, 1024), "llama7b": (4096, 11008)}
DTYPES = ("f32", "bf16")
# max|y_ours - y_torch| / max|y_torch|. bf16: torch rounds gate, up, the
# product and y to bf16; ours keeps f32 between the matmuls.
TOLERANCE = {"f32": 1e-4, "bf16": 4e-2}
NOISY_SPREAD = 0.2  # the ratios' (p90 - p10) / median that marks a row noisy
BUSY_CPUS = 0.25  # other processes' CPU use that marks a row busy
TSV_COLUMNS = ("shape", "dtype", "M", "T", "ours_ms", "peer_ms", "ratio", "rel_err", "note")


def csv_list(allowed=None, conv=str):
    def parse(s):
        out = [conv(v.strip()) for v in s.split(",") if v.strip()]
        for v in out:
            if allowed and v not in allowed:
                raise argparse.ArgumentTypeError(f"{v!r}: expected one of {', '.join(allowed)}")
        if not out:
            raise argparse.ArgumentTypeError("empty list")
        return out
    return parse


# ---------------------------------------------------------------- the BLAS


def mapped_libraries(*needles):
    """Real paths of this process's mapped libraries whose names hold a needle."""
    libs = set()
    with open("/proc/self/maps") as fh:
        for line in fh:
            path = line.split()[-1]
            if path.startswith("/") and any(n in os.path.basename(path) for n in needles):
                libs.add(os.path.realpath(path))
    return sorted(libs)


def blas_report(torch, F):
    """What float32 F.linear runs on: the BLAS libraries mapped after one call,
    Debian's alternative for libblas.so.3, OpenBLAS's own config string. The
    reference BLAS (libblas3's Fortran loops) is ~9x slower than OpenBLAS at
    cyber 512 tokens: not what users run, so it is refused unless allowed."""
    with torch.inference_mode():
        F.linear(torch.ones(4, 64), torch.ones(64, 64))
    libs = mapped_libraries("blas", "mkl")
    config = torch.__config__.show()
    info = {"libs": libs, "openblas": None, "reference": False,
            "blas_info": next((p.split("=", 1)[1] for p in config.replace(",", " ").split()
                               if p.startswith("BLAS_INFO=")), "?")}
    for path in libs:
        name = os.path.basename(path)
        if "openblas" in name:
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            info["openblas"] = lib
            info["openblas_config"] = lib.openblas_get_config().decode()
        elif name.startswith("libblas.so") and "/blas/" in path:
            info["reference"] = True  # netlib: /usr/lib/<triplet>/blas/libblas.so.3
    try:
        q = subprocess.run(["update-alternatives", "--query", "libblas.so.3-x86_64-linux-gnu"],
                           capture_output=True, text=True, timeout=10).stdout
        info["alternative"] = next((line.split(":", 1)[1].strip() for line in q.splitlines()
                                    if line.startswith("Value:")), "?")
    except (OSError, subprocess.SubprocessError):
        info["alternative"] = "? (no update-alternatives)"
    return info


def set_threads(torch, blas, threads):
    torch.set_num_threads(threads)
    if blas["openblas"] is not None:  # its own pool, sized by OPENBLAS_NUM_THREADS otherwise
        blas["openblas"].openblas_set_num_threads(threads)


# ---------------------------------------------------------------- timing


def cpu_clock():
    """(busy seconds of all CPUs from /proc/stat, this process's CPU seconds)."""
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:9]]
    busy = (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    u = resource.getrusage(resource.RUSAGE_SELF)
    return busy, u.ru_utime + u.ru_stime


def batch(fn, min_s):
    """Seconds per call over >= min_s of calls, after one untimed call when
    calls are short (the other side ran last)."""
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    if one >= min_s:
        return one
    calls, t0 = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        el = time.perf_counter() - t0
        if el >= min_s:
            return el / calls


def quantiles(s):
    s = sorted(s)

    def at(q):  # nearest rank, as bench/interleaved_timing.cpp
        return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]
    return at(0.5), at(0.1), at(0.9)


def time_interleaved(ours, peer, min_batch_s, pause_s):
    """bench/interleaved_timing.cpp's rule with longer batches and pauses: a
    batch of ours, then one of the peer's, pause_s apart (idle workers spin
    for a while after a call: OpenBLAS's for 2^28 cycles, ~0.1 s, on the
    cores ours needs: glass at 16 tokens, 2 threads, takes ours 0.2-0.9 ms
    instead of 0.024 with pauses of 10-60 ms); >= 5 rounds and 0.5 s (3 rounds
    for calls that make it > 3 s), up to 25 rounds or 3 s while the per-round
    ratios' spread stays over NOISY_SPREAD. Returns the medians of ours, of
    the peer's, of peer/ours per round, whether it stayed noisy, and the
    CPUs other processes used meanwhile."""
    sa, sb = [], []
    c0, t0 = cpu_clock(), time.perf_counter()

    def spread():
        med, p10, p90 = quantiles([b / a for a, b in zip(sa, sb)])
        return (p90 - p10) / med
    while True:
        time.sleep(pause_s)
        sa.append(batch(ours, min_batch_s))
        time.sleep(pause_s)
        sb.append(batch(peer, min_batch_s))
        el = time.perf_counter() - t0
        enough = (len(sa) >= 5 or (len(sa) >= 3 and el >= 3.0)) and el >= 0.5
        if enough and (spread() <= NOISY_SPREAD or len(sa) >= 25 or el >= 3.0):
            break
    c1, wall = cpu_clock(), time.perf_counter() - t0
    others = max(0.0, ((c1[0] - c0[0]) - (c1[1] - c0[1])) / wall)
    return (statistics.median(sa), statistics.median(sb),
            quantiles([b / a for a, b in zip(sa, sb)])[0], spread() > NOISY_SPREAD, others)


# ---------------------------------------------------------------- the rows


def make_weights(torch, d, f, seed):
    """Uniform in +-1/sqrt(fan-in) (as bench/weights.cpp), (out, in)."""
    g = torch.Generator().manual_seed(seed)

    def u(rows, cols):
        return (torch.rand(rows, cols, generator=g) * 2 - 1) / cols ** 0.5
    return u(f, d), u(f, d), u(d, f)


def run_shape(torch, F, swiglu, args, blas, shape, si, emit):
    d, f = SHAPES[shape]
    w32 = make_weights(torch, d, f, args.seed + si)
    x_all = torch.rand(max(args.tokens), d, generator=torch.Generator().manual_seed(42)) * 2 - 1
    bad = 0
    for dt in args.dtypes:
        tdt = torch.float32 if dt == "f32" else torch.bfloat16
        w = tuple(t.to(tdt).contiguous() for t in w32)
        w_ours = [t.float().numpy() for t in w]  # the very weights torch has
        for t in args.threads:
            set_threads(torch, blas, t)
            ffn = swiglu.Ffn(*w_ours, layout="out_in", dtype=dt, threads=t)
            for m in args.tokens:
                x = x_all[:m].to(tdt).contiguous()
                x_ours = x.float().contiguous()
                y_ours = torch.empty_like(x_ours)

                def torch_call(x=x):
                    return F.linear(F.silu(F.linear(x, w[0])) * F.linear(x, w[1]), w[2])

                def ours_call(x_ours=x_ours, y_ours=y_ours):
                    ffn.forward(x_ours, out=y_ours)
                with torch.inference_mode():
                    y_torch = torch_call().float()  # checked before timing
                    ours_call()
                    scale = float(y_torch.abs().max()) or 1.0
                    err = float((y_ours - y_torch).abs().max()) / scale
                    a, b, ratio, noisy, others = time_interleaved(
                        ours_call, torch_call, args.min_batch_s, args.pause_ms * 1e-3)
                note = []
                if not err <= TOLERANCE[dt]:
                    note.append("MISMATCH")
                    bad += 1
                if dt == "f32" and blas["reference"]:
                    note.append("reference-BLAS")
                if noisy:
                    note.append("noisy")
                if others > BUSY_CPUS:
                    note.append("busy")
                emit(shape, d, f, dt, m, t, a * 1e3, b * 1e3, ratio, err, " ".join(note))
            del ffn
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", type=csv_list(SHAPES), default=["cyber", "llama7b"])
    p.add_argument("--dtypes", type=csv_list(DTYPES), default=list(DTYPES))
    p.add_argument("--tokens", type=csv_list(conv=int), default=[1, 512])
    p.add_argument("--threads", type=csv_list(conv=int), default=[2])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-batch-s", type=float, default=0.05,
                   help="shortest batch of calls (default 0.05 s: dilutes the other side's "
                        "spinning workers, which users meet too)")
    p.add_argument("--pause-ms", type=float, default=200.0,
                   help="sleep between the two sides' batches (default 200: OpenBLAS's idle "
                        "workers spin ~0.1 s after torch's call; 10 or less measures how they "
                        "slow ours)")
    p.add_argument("--tsv", help="also write the rows to FILE, tab-separated")
    p.add_argument("--allow-reference-blas", action="store_true",
                   help="time torch's float32 on the netlib reference BLAS anyway (flagged)")
    args = p.parse_args()
    if any(m < 1 for m in args.tokens) or any(t < 1 for t in args.threads):
        p.error("--tokens and --threads must be positive")

    import torch
    import torch.nn.functional as F
    import swiglu

    blas = blas_report(torch, F)
    print(f"torch: {torch.__version__}, BLAS_INFO={blas['blas_info']}, "
          f"oneDNN {torch.backends.mkldnn.is_available() and 'yes' or 'no'}, "
          f"MKL {torch.backends.mkl.is_available() and 'yes' or 'no'}")
    print(f"libblas.so.3 alternative: {blas['alternative']}")
    print(f"float32 F.linear's BLAS (mapped): {', '.join(blas['libs']) or 'none mapped'}")
    if blas["openblas"] is not None:
        print(f"OpenBLAS: {blas['openblas_config']}")
    forced = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")}
    if forced:  # OPENBLAS_CORETYPE overrides the kernels it would pick for this CPU
        print("OpenBLAS environment: " + " ".join(f"{k}={v}" for k, v in sorted(forced.items())))
    print(f"swiglu: {swiglu.version()} ({os.path.dirname(swiglu.__file__)})")
    if blas["reference"]:
        msg = ("torch's float32 runs on the netlib REFERENCE BLAS (Debian's libblas3), ~9x "
               "slower than OpenBLAS: not the peer users run. `apt-get install "
               "libopenblas0-pthread` (or `update-alternatives --config "
               "libblas.so.3-x86_64-linux-gnu`)")
        if not args.allow_reference_blas:
            print(f"torch_peer: {msg}; --allow-reference-blas times it anyway", file=sys.stderr)
            return 3
        print(f"WARNING: {msg}; f32 rows flagged 'reference-BLAS'")
    print("ours: swiglu.Ffn(W (out, in), dtype, threads=T).forward(x, out=y); torch: F.linear "
          "block under inference_mode, torch.set_num_threads(T)")
    print(f"torch/ours: median of per-round ratios (> 1: ours faster); batches >= "
          f"{args.min_batch_s * 1e3:.0f} ms, {args.pause_ms:g} ms apart; 'noisy' = spread > "
          f"{NOISY_SPREAD * 100:.0f} %, 'busy' = others used > {BUSY_CPUS} CPUs\n")
    print("| shape | d | f | dtype | M | T | ours ms | torch ms | torch/ours | rel err | note |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tsv = open(args.tsv, "w") if args.tsv else None
    if tsv:
        print("\t".join(TSV_COLUMNS), file=tsv, flush=True)

    def emit(shape, d, f, dt, m, t, ours_ms, peer_ms, ratio, err, note):
        print(f"| {shape} | {d} | {f} | {dt} | {m} | {t} | {ours_ms:.4g} | {peer_ms:.4g} | "
              f"{ratio:.2f} | {err:.1e} | {note} |", flush=True)
        if tsv:
            print("\t".join(str(v) for v in (shape, dt, m, t, f"{ours_ms:.6g}", f"{peer_ms:.6g}",
                                             f"{ratio:.4f}", f"{err:.2e}", note)),
                  file=tsv, flush=True)
    bad = 0
    for si, shape in enumerate(args.shapes):
        bad += run_shape(torch, F, swiglu, args, blas, shape, si, emit)
    if tsv:
        tsv.close()
    if bad:
        print(f"\n{bad} rows MISMATCH: rel err over the bound (f32 1e-4, bf16 4e-2)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
