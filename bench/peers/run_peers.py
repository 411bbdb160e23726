#!/usr/bin/env python3
"""The SwiGLU block in PyTorch next to swiglu_bench, in one run, one table.

PyTorch runs the block the way its users write it,

    with torch.inference_mode():
        y = F.linear(F.silu(F.linear(x, Wg)) * F.linear(x, Wu), Wd)

with W* stored (out, in) as nn.Linear keeps them, for the shapes glass
(d=128, f=341), cyber (384, 1024) and llama7b (4096, 11008), 1, 16 and 512
tokens, float32 and bfloat16, 1 and 2 threads. Each thread count runs in its
own Python process with OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and
MKL_NUM_THREADS set before torch is imported, plus torch.set_num_threads().
Time: the minimum over several runs of time.perf_counter() around a batch of
calls, after one warm-up call, within a time budget per row.

Then the same rows of our library come from swiglu_bench
(--benchmark_filter=..., --benchmark_format=json, rows
ffn/<shape>/<dtype>/M:<tokens>/T:<threads>), and one table is printed:
shape, dtype, M, T, ours (ms), torch (ms), torch/ours.

Once per shape and dtype, torch's y is compared with `swiglu run` on the
same weights (a safetensors file written here) and x (.npy).

Usage:
    python3 bench/peers/run_peers.py [--quick] [--bench build/bench/swiglu_bench]
        [--tokens 1,16,64,128,512] [--threads 1,2] [--dtypes f32,bf16]

Needs Debian's python3-torch and python3-numpy (stdlib only in this parent
process; the torch work runs under a Python that can import torch).
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SHAPES = {  # name -> (d, f)
    "glass": (128, 341),
    "cyber": (384, 1024),
    "llama7b": (4096, 11008),
}
DTYPES = ("f32", "bf16")
TORCH_DTYPE_NAME = {"f32": "float32", "bf16": "bfloat16"}
# Loose agreement bounds for torch's y vs ours, relative to max|y_torch|.
# bf16: torch rounds gate, up, act and y to bf16; ours keeps f32 between the
# matmuls and rounds only x and act.
VERIFY_TOL = {"f32": 1e-4, "bf16": 4e-2}
VERIFY_TOKENS = 16


# Start of the run (the parent's, inherited by the workers), for log times.
T0 = float(os.environ.setdefault("SWIGLU_PEERS_T0", repr(time.time())))


def log(msg):
    print(f"[{time.time() - T0:4.0f} s] {msg}", file=sys.stderr, flush=True)


def csv_ints(s):
    return [int(v) for v in s.split(",") if v.strip()]


def csv_names(s, allowed):
    out = [v.strip() for v in s.split(",") if v.strip()]
    for v in out:
        if v not in allowed:
            raise argparse.ArgumentTypeError(f"{v!r}: expected one of {', '.join(allowed)}")
    return out


# --------------------------------------------------------------------------
# The torch side: runs in a child process per thread count (--worker)


def worker_main(a):
    threads = a.threads[0]
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16}

    def block(x, wg, wu, wd):
        return F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)

    def timed(fn, budget_s, max_call_s):
        """Best seconds per call and the number of timed calls."""
        t0 = time.perf_counter()
        fn()  # warm-up: first touch, oneDNN primitive creation
        warm = time.perf_counter() - t0
        if warm > max_call_s:
            return warm, 1
        # Calibration: the fastest of up to 5 single calls (a quarter of the
        # budget at most), so one preempted call does not set the batch size.
        singles, t_cal = [], time.perf_counter()
        while len(singles) < 5 and (not singles or time.perf_counter() - t_cal < budget_s / 4):
            t0 = time.perf_counter()
            fn()
            singles.append(time.perf_counter() - t0)
        one = best = min(singles)
        calls = len(singles)
        n = max(1, int(0.02 / max(one, 1e-9)))  # a run lasts >= ~20 ms
        long_calls = one * n > budget_s / 4
        runs_min = 1 if long_calls else 5  # long calls: >= 2 timed calls in all
        start = time.perf_counter()
        runs = 0
        while runs < 50 and (runs < runs_min or time.perf_counter() - start < budget_s):
            if long_calls and runs >= runs_min:
                break
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter() - t0) / n)
            calls += n
            runs += 1
        return best, calls

    results = []
    checks = []
    for si, shape in enumerate(a.shapes):
        d, f = SHAPES[shape]
        gen = torch.Generator().manual_seed(a.seed * 1000 + si)
        w32 = (torch.randn(f, d, generator=gen) / math.sqrt(d),
               torch.randn(f, d, generator=gen) / math.sqrt(d),
               torch.randn(d, f, generator=gen) / math.sqrt(f))
        x32 = torch.randn(max(max(a.tokens), VERIFY_TOKENS), d, generator=gen)
        for dt in a.dtypes:
            w = tuple(t.to(tdt[dt]).contiguous() for t in w32)
            if a.verify_dir:
                checks.append(verify(a, shape, dt, w, x32[:VERIFY_TOKENS], block, torch))
            rate = None  # FLOP/s of the last row measured, to skip hopeless ones
            for m in sorted(a.tokens):
                flops = 6.0 * m * d * f
                row = {"shape": shape, "dtype": dt, "M": m, "T": threads}
                if rate and flops / rate > a.max_call_s:
                    row.update(ms=flops / rate * 1e3, estimated=True, calls=0)
                    log(f"  torch {shape}/{dt}/M:{m}/T:{threads}: skipped, one call would take "
                        f"~{flops / rate:.0f} s (> --max-call-s {a.max_call_s:g})")
                    results.append(row)
                    continue
                x = x32[:m].to(tdt[dt]).contiguous()
                with torch.inference_mode():
                    s, calls = timed(lambda x=x, w=w: block(x, *w), a.budget_s, a.max_call_s)
                rate = flops / s
                row.update(ms=s * 1e3, estimated=False, calls=calls)
                log(f"  torch {shape}/{dt}/M:{m}/T:{threads}: {s * 1e3:.4g} ms "
                    f"({calls} calls, {rate * 1e-9:.1f} GFLOP/s)")
                results.append(row)
            w = None  # free this dtype's copy before the next
    with open(a.worker_out, "w") as fh:
        json.dump({"rows": results, "checks": checks, "torch_threads": torch.get_num_threads()}, fh)
    return 0


def write_safetensors(path, tensors, torch):
    """tensors: list of (name, 2-D contiguous tensor, float32 or bfloat16)."""
    header, blobs, at = {}, [], 0
    for name, t in tensors:
        if t.dtype == torch.bfloat16:
            raw, code = t.contiguous().view(torch.int16).numpy().tobytes(), "BF16"
        else:
            raw, code = t.contiguous().numpy().astype("<f4", copy=False).tobytes(), "F32"
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # the data section starts 8-byte aligned
    with open(path, "wb") as fh:
        fh.write(len(h).to_bytes(8, "little"))
        fh.write(h)
        for raw in blobs:
            fh.write(raw)


def verify(a, shape, dt, w, x32, block, torch):
    """torch's y vs `swiglu run` on the same weights and x."""
    import numpy as np

    check = {"shape": shape, "dtype": dt, "M": int(x32.shape[0]), "tol": VERIFY_TOL[dt]}
    wdir = os.path.join(a.verify_dir, f"{shape}_{dt}")
    os.makedirs(wdir, exist_ok=True)
    wpath, xpath, ypath = (os.path.join(wdir, n) for n in ("w.safetensors", "x.npy", "y.npy"))
    try:
        x = x32.to(w[0].dtype)
        with torch.inference_mode():
            y_torch = block(x, *w).float().numpy().astype(np.float64)
        write_safetensors(wpath, [("gate_proj.weight", w[0]), ("up_proj.weight", w[1]),
                                  ("down_proj.weight", w[2])], torch)
        np.save(xpath, x.float().numpy().astype(np.float32))  # bf16 x: exactly what torch saw
        cmd = [a.cli, "run", "--weights", wpath, "--input", xpath, "--output", ypath,
               "--threads", "1"]
        if dt != "f32":
            cmd += ["--dtype", dt]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            check["error"] = f"swiglu run exit {p.returncode}: {p.stderr.strip()[:300]}"
        else:
            y_ours = np.load(ypath).astype(np.float64)
            scale = float(np.max(np.abs(y_torch))) or 1.0
            check["rel"] = float(np.max(np.abs(y_ours - y_torch))) / scale
            check["ok"] = bool(check["rel"] <= check["tol"])
    except Exception as e:  # noqa: BLE001 - report and carry on: this check is optional
        check["error"] = f"{type(e).__name__}: {e}"
    finally:
        shutil.rmtree(wdir, ignore_errors=True)
    msg = check.get("error") or f"max|y_ours - y_torch| / max|y_torch| = {check['rel']:.2e}"
    log(f"  check {shape}/{dt}: {msg}")
    return check


BLAS_PROBE = r"""
import json, os, sys
import torch, torch.nn.functional as F
torch.set_num_threads(1)
out = {"version": torch.__version__, "config": torch.__config__.show(),
       "parallel": torch.__config__.parallel_info(),
       "mkldnn": torch.backends.mkldnn.is_available(), "mkl": torch.backends.mkl.is_available()}
def run(dt):
    sys.stdout.flush()
    print("@@" + str(dt), flush=True)
    x = torch.randn(16, 256, dtype=dt); w = torch.randn(512, 256, dtype=dt)
    with torch.inference_mode():
        for _ in range(2): F.linear(x, w)
    sys.stdout.flush()
run(torch.float32)
run(torch.bfloat16)
libs = set()
with open("/proc/self/maps") as fh:
    for line in fh:
        p = line.split()[-1]
        b = os.path.basename(p)
        if any(k in b for k in ("blas", "lapack", "mkl", "dnnl", "gomp", "iomp", "blis")):
            libs.add(p)
out["libs"] = sorted(libs)
print("@@json" + json.dumps(out), flush=True)
"""


def blas_probe(py):
    """What torch runs float32 and bfloat16 F.linear on, from oneDNN's verbose
    log (a oneDNN matmul line after the marker, or none) and the BLAS library
    the process has mapped."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    p = subprocess.run([py, "-c", BLAS_PROBE], capture_output=True, text=True, env=env, timeout=120)
    info, section, impl = {}, None, {}
    for line in p.stdout.splitlines():
        if line.startswith("@@json"):
            info = json.loads(line[6:])
        elif line.startswith("@@"):
            section = line[2:]
        elif line.startswith(("onednn_verbose,exec", "dnnl_verbose,exec")) and section:
            fields = line.split(",")
            impl.setdefault(section, f"oneDNN {fields[3]} {fields[4]}")
    if not info:
        return {"error": (p.stderr or p.stdout).strip()[-500:]}
    blas = [l for l in info["libs"] if "blas" in os.path.basename(l) or "mkl" in os.path.basename(l)]
    real = [os.path.realpath(l) for l in blas]

    def kind(path):
        if "mkl" in path:
            return "Intel MKL"
        if "openblas" in path:
            return "OpenBLAS"
        if "blis" in path:
            return "BLIS"
        if "atlas" in path:
            return "ATLAS"
        if re.search(r"/blas/libblas\.so", path):
            return "reference BLAS (netlib, Debian libblas3)"
        return "BLAS"

    blas_desc = ", ".join(f"{kind(r)} ({r})" for r in real) or "no BLAS library mapped"
    m = re.search(r"BLAS_INFO=([^,\s]+)", info["config"])
    dnnl = re.search(r"MKL-DNN (v[\d.]+)", info["config"])
    cap = re.search(r"CPU capability usage: (\S+)", info["config"])
    res = {
        "version": info["version"],
        "blas_info": m.group(1) if m else "?",
        "blas_libs": real,
        "onednn": dnnl.group(1) if dnnl else ("yes" if info["mkldnn"] else "no"),
        "cpu_capability": cap.group(1) if cap else "?",
        "mkl": info["mkl"],
        "config": info["config"],
    }
    res["f32"] = impl.get("torch.float32") or f"BLAS sgemm: {blas_desc}"
    res["bf16"] = impl.get("torch.bfloat16") or f"not oneDNN (BLAS or ATen's own kernel): {blas_desc}"
    return res


class OtherLoad:
    """CPU time other processes used while a phase ran, in cores: all busy
    time in /proc/stat minus this process's and its children's CPU time. On a
    small machine another process on one core wrecks 2-thread timings (a
    descheduled worker stalls every barrier by a time slice)."""

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as fh:
                v = [int(x) for x in fh.readline().split()[1:]]
        except OSError:
            return None
        hz = os.sysconf("SC_CLK_TCK")
        busy = (sum(v[:8]) - v[3] - v[4]) / hz  # all but idle and iowait
        own = os.times()
        return time.monotonic(), busy, own.user + own.system + own.children_user + own.children_system

    def __enter__(self):
        self.start = self._sample()
        return self

    def __exit__(self, *exc):
        end = self._sample()
        self.cores = None
        if self.start and end and end[0] > self.start[0]:
            self.cores = max(0.0, ((end[1] - self.start[1]) - (end[2] - self.start[2]))
                             / (end[0] - self.start[0]))
        return False


def wait_quiet(max_s):
    """Waits (at most max_s) until the CPUs are >= 90% idle over three
    consecutive 1-s windows. Returns True when they were."""
    if max_s <= 0:
        return True
    t0, ok = time.monotonic(), 0
    while time.monotonic() - t0 < max_s:
        a = OtherLoad._sample()
        time.sleep(1.0)
        b = OtherLoad._sample()
        if not a or not b:
            return True
        busy = (b[1] - a[1]) / (b[0] - a[0]) / max(1, os.cpu_count() or 1)
        ok = ok + 1 if busy <= 0.10 else 0
        if ok >= 3:
            return True
    log(f"CPUs still busy after --wait-quiet {max_s:g} s; measuring anyway")
    return False


def torch_python():
    """A Python that can import torch and numpy: this one, else Debian's."""
    seen = []
    for py in (sys.executable, "/usr/bin/python3", shutil.which("python3")):
        if not py or py in seen or not os.path.exists(py):
            continue
        seen.append(py)
        r = subprocess.run([py, "-c", "import torch, numpy"], capture_output=True)
        if r.returncode == 0:
            return py
    return None


# --------------------------------------------------------------------------
# Our side


def run_ours(a):
    """{(shape, dtype, M, T): ms or error string}, and the JSON context."""
    alt = "|".join
    filt = (f"^ffn/({alt(a.shapes)})/({alt(a.dtypes)})/M:({alt(map(str, a.tokens))})"
            f"/T:({alt(map(str, a.threads))})(/|$)")
    cmd = [a.bench, f"--benchmark_filter={filt}", "--benchmark_format=json"]
    log(f"ours: {' '.join(cmd)}")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.bench_timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        log(f"ours: could not run {a.bench}: {e}")
        return {}, {}
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        log(f"ours: exit {p.returncode}, no JSON on stdout; stderr:\n{p.stderr.strip()[-2000:]}")
        return {}, {}
    if p.returncode != 0:
        log(f"ours: exit {p.returncode}: {p.stderr.strip()[-1000:]}")
    rows = {}
    name_re = re.compile(r"^ffn/([^/]+)/([^/]+)/M:(\d+)/T:(\d+)")
    for b in doc.get("benchmarks", []):
        m = name_re.match(b.get("name", ""))
        if not m or b.get("run_type", "iteration") != "iteration":
            continue
        key = (m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))
        if b.get("error_occurred"):
            rows[key] = "error: " + b.get("error_message", "?")
        elif "ns_per_call" in b:
            rows[key] = b["ns_per_call"] * 1e-6
        else:
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
            rows[key] = b["real_time"] * scale
    return rows, doc.get("context", {})


# --------------------------------------------------------------------------


def fmt_ms(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 1:
        return f"{v:.3g}"
    return f"{v:.3f}" if v >= 0.01 else f"{v:.4f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="glass and cyber only (no llama7b)")
    ap.add_argument("--bench", default=os.path.join(REPO, "build/bench/swiglu_bench"),
                    help="swiglu_bench binary (default build/bench/swiglu_bench)")
    ap.add_argument("--cli", default=None,
                    help="swiglu command for the y check (default: src/cli/swiglu next to --bench's "
                         "build dir)")
    ap.add_argument("--shapes", type=lambda s: csv_names(s, list(SHAPES)), default=list(SHAPES),
                    help="comma-separated subset of glass,cyber,llama7b (default all)")
    ap.add_argument("--dtypes", type=lambda s: csv_names(s, list(DTYPES)), default=list(DTYPES),
                    help="comma-separated subset of f32,bf16 (default both)")
    ap.add_argument("--tokens", type=csv_ints, default=[1, 16, 512],
                    help="token counts (default 1,16,512; the bench also has 64,128)")
    ap.add_argument("--threads", type=csv_ints, default=[1, 2], help="thread counts (default 1,2)")
    ap.add_argument("--budget-s", type=float, default=1.0,
                    help="timing budget per torch row after warm-up (default 1.0)")
    ap.add_argument("--max-call-s", type=float, default=5.0,
                    help="skip a torch row whose single call would take longer; its time is then "
                         "estimated from the previous token count and marked ~ (default 5)")
    ap.add_argument("--busy-cores", type=float, default=0.15,
                    help="mark times (!) measured while other processes used more CPU than this, "
                         "in cores (default 0.15)")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="before each part, wait up to S seconds for the CPUs to be >= 90%% idle "
                         "(shared machines; default 0: don't wait)")
    ap.add_argument("--seed", type=int, default=1234, help="seed of the random weights and x")
    ap.add_argument("--no-verify", action="store_true", help="skip the torch-vs-ours y check")
    ap.add_argument("--no-ours", action="store_true", help="torch only")
    ap.add_argument("--bench-timeout", type=float, default=1800,
                    help="seconds swiglu_bench may take (default 1800)")
    ap.add_argument("--json", metavar="FILE", help="also write every number to FILE")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    ap.add_argument("--verify-dir", help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a.worker:
        return worker_main(a)
    if a.quick:
        a.shapes = [s for s in a.shapes if s != "llama7b"]
    if a.cli is None:
        a.cli = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.bench))),
                             "src/cli/swiglu")
    t_start = time.time()

    py = torch_python()
    if not py:
        log("no Python here can import torch and numpy: apt-get install python3-torch python3-numpy")
        return 2
    log(f"torch under {py}")
    blas = blas_probe(py)
    if "error" in blas:
        log(f"torch BLAS probe failed: {blas['error']}")
    else:
        log(f"torch {blas['version']}: BLAS_INFO={blas['blas_info']}, float32 -> {blas['f32']}; "
            f"bfloat16 -> {blas['bf16']}")

    verify_ok = not a.no_verify and os.access(a.cli, os.X_OK)
    if not a.no_verify and not verify_ok:
        log(f"y check skipped: {a.cli} not found (--cli)")
    torch_rows, checks, others = {}, [], {}
    tmp = tempfile.mkdtemp(prefix="swiglu_peers_")
    try:
        for i, t in enumerate(a.threads):
            env = dict(os.environ, OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t),
                       MKL_NUM_THREADS=str(t))
            for k in ("ONEDNN_VERBOSE", "DNNL_VERBOSE"):
                env.pop(k, None)
            out = os.path.join(tmp, f"torch_T{t}.json")
            cmd = [py, os.path.abspath(__file__), "--worker", "--worker-out", out,
                   "--threads", str(t), "--shapes", ",".join(a.shapes),
                   "--dtypes", ",".join(a.dtypes), "--tokens", ",".join(map(str, a.tokens)),
                   "--budget-s", str(a.budget_s), "--max-call-s", str(a.max_call_s),
                   "--seed", str(a.seed), "--cli", a.cli]
            if verify_ok and i == 0:
                cmd += ["--verify-dir", tmp]
            wait_quiet(a.wait_quiet)
            log(f"torch, {t} thread(s):")
            with OtherLoad() as load:
                r = subprocess.run(cmd, env=env)
            others[f"torch T={t}"] = load.cores
            if r.returncode != 0:
                log(f"torch worker for {t} thread(s) failed (exit {r.returncode})")
                continue
            with open(out) as fh:
                res = json.load(fh)
            if res.get("torch_threads") != t:
                log(f"warning: torch.get_num_threads() = {res.get('torch_threads')}, asked {t}")
            for row in res["rows"]:
                torch_rows[(row["shape"], row["dtype"], row["M"], row["T"])] = row
            checks += res["checks"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    ours, context = {}, {}
    if not a.no_ours:
        wait_quiet(a.wait_quiet)
        with OtherLoad() as load:
            ours, context = run_ours(a)
        others["ours"] = load.cores

    # ---- the table
    print()
    if "error" not in blas:
        print(f"torch {blas['version']} (ATen CPU capability {blas['cpu_capability']}, "
              f"BLAS_INFO={blas['blas_info']}, MKL {'yes' if blas['mkl'] else 'no'}, "
              f"oneDNN {blas['onednn']})")
        print(f"  float32  F.linear -> {blas['f32']}")
        print(f"  bfloat16 F.linear -> {blas['bf16']}")
    if context:
        impl = context.get("swiglu_matmul", "?")
        line = f"ours: swiglu_bench ({a.bench}), f32 matmul {impl}"
        if context.get("swiglu_matmul_bf16"):
            line += f", bf16 matmul {context['swiglu_matmul_bf16']}"
        print(line)
        if context.get("cpu_model"):
            print(f"cpu: {context['cpu_model']}")
    print()
    hdr = f"{'shape':<8} {'dtype':<5} {'M':>4} {'T':>2} {'ours (ms)':>10} {'torch (ms)':>11} {'torch/ours':>11}"
    print(hdr)
    print("-" * len(hdr))
    notes = set()
    table = []
    for shape in a.shapes:
        for dt in a.dtypes:
            for m in sorted(a.tokens):
                for t in a.threads:
                    key = (shape, dt, m, t)
                    o = ours.get(key)
                    tr = torch_rows.get(key)
                    o_ms = o if isinstance(o, float) else None
                    t_ms = tr["ms"] if tr else None
                    est = bool(tr and tr.get("estimated"))
                    o_s = fmt_ms(o_ms)
                    if isinstance(o, str):
                        o_s = "error"
                        notes.add(f"ours {shape}/{dt}/M:{m}/T:{t}: {o}")
                    elif o is None and not a.no_ours:
                        o_s = "n/a"
                        notes.add("n/a: swiglu_bench has no such row (dtype not built in?)" if ours
                                  else f"n/a: no results from {a.bench} (see the log above)")
                    busy_o = (others.get("ours") or 0) > a.busy_cores
                    busy_t = (others.get(f"torch T={t}") or 0) > a.busy_cores
                    if busy_o and o_ms is not None:
                        o_s += "!"
                    t_s = ("~" if est else "") + fmt_ms(t_ms) + ("!" if busy_t and tr else "")
                    ratio = f"{t_ms / o_ms:.2f}x" if (o_ms and t_ms) else "-"
                    if est and ratio != "-":
                        ratio = "~" + ratio
                    if est:
                        notes.add(f"~: torch row not run, one call estimated > --max-call-s "
                                  f"{a.max_call_s:g} s from the previous token count's rate")
                    print(f"{shape:<8} {dt:<5} {m:>4} {t:>2} {o_s:>10} {t_s:>11} {ratio:>11}")
                    table.append({"shape": shape, "dtype": dt, "M": m, "T": t, "ours_ms": o_ms,
                                  "torch_ms": t_ms, "torch_estimated": est})
    print()
    print("ours: x and y float32, weights f32 or bf16 (prepacked); torch: x, weights and y in the "
          "dtype. torch/ours > 1: ours is faster.")
    for n in sorted(notes):
        print(n)
    load_s = ", ".join(f"{k} {v:.2f}" for k, v in others.items() if v is not None)
    if load_s:
        print(f"other processes' CPU use while each part ran, in cores: {load_s}")
    if any((v or 0) > a.busy_cores for v in others.values()):
        print(f"!: other processes used > {a.busy_cores:g} cores meanwhile; these times (2-thread "
              "ones above all) are not to be trusted: rerun on a quiet machine")
    for c in checks:
        where = f"{c['shape']}/{c['dtype']} M={c['M']}"
        if "error" in c:
            print(f"check {where}: not done ({c['error']})")
        else:
            print(f"check {where}: max|y_ours - y_torch| / max|y_torch| = {c['rel']:.1e} "
                  f"(tol {c['tol']:.0e}) {'ok' if c['ok'] else 'DISAGREE'}")
    print(f"total {time.time() - t_start:.0f} s")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"torch": {k: v for k, v in blas.items()}, "rows": table, "checks": checks,
                       "other_load_cores": others,
                       "ours_context": context}, fh, indent=1)
    return 1 if any(c.get("ok") is False for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
