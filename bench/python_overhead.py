"""What the Python binding adds to a call: the glass block (d = 128,
f = 341) at 1 token, called from Python (Ffn.forward with `out`) and the
same call looped in C++, interleaved in one process, best of rounds; where
PyTorch is installed, also with tensors (Ffn.forward with `out`) and through
swiglu.torch.SwiGLU (a new output tensor per call, as a module returns).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py
"""
import contextlib
import time

import numpy as np

import swiglu

D, F, CALLS, ROUNDS = 128, 341, 20000, 7

rng = np.random.default_rng(0)
weights = [rng.uniform(-0.1, 0.1, s).astype(np.float32) for s in [(F, D), (F, D), (D, F)]]
ffn = swiglu.Ffn(*weights, threads=1)
x = rng.uniform(-1, 1, (1, D)).astype(np.float32)
out = np.empty_like(x)
try:
    import torch
    from swiglu.torch import SwiGLU
except ImportError:
    torch = None


def timed(call):
    start = time.perf_counter()
    for _ in range(CALLS):
        call()
    return (time.perf_counter() - start) / CALLS * 1e6


ways = {"python": lambda: ffn.forward(x, out=out)}
if torch is not None:
    xt, outt = torch.from_numpy(x), torch.from_numpy(out.copy())
    module = SwiGLU(*weights, threads=1)  # the same block, as a module
    ways["tensors"] = lambda: ffn.forward(xt, out=outt)
    ways["module"] = lambda: module(xt)
best = {name: float("inf") for name in ways}
best["C++"] = float("inf")
with (torch.inference_mode() if torch is not None else contextlib.nullcontext()):
    for _ in range(ROUNDS):
        for name, call in ways.items():
            best[name] = min(best[name], timed(call))
        start = time.perf_counter()
        ffn._impl._forward_loop(x, out, CALLS)
        best["C++"] = min(best["C++"], (time.perf_counter() - start) / CALLS * 1e6)
c = best["C++"]
print("glass d=%d f=%d, 1 token, 1 thread: C++ %.2f us/call" % (D, F, c))
for name in ways:
    p = best[name]
    print("  %-8s %.2f us/call: the binding adds %.2f us (%.0f %%)" % (name, p, p - c, 100 * (p - c) / c))
