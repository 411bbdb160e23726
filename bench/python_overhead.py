"""What the Python binding adds to a call: the glass block (d = 128,
f = 341) at 1 token, called from Python (Ffn.forward with `out`) and the
same call looped in C++, interleaved in one process, best of rounds.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py
"""
import time

import numpy as np

import swiglu

D, F, CALLS, ROUNDS = 128, 341, 20000, 7

rng = np.random.default_rng(0)
ffn = swiglu.Ffn(*(rng.uniform(-0.1, 0.1, s).astype(np.float32) for s in [(F, D), (F, D), (D, F)]),
                 threads=1)
x = rng.uniform(-1, 1, (1, D)).astype(np.float32)
out = np.empty_like(x)
python_us, cpp_us = [], []
for _ in range(ROUNDS):
    start = time.perf_counter()
    for _ in range(CALLS):
        ffn.forward(x, out=out)
    python_us.append((time.perf_counter() - start) / CALLS * 1e6)
    start = time.perf_counter()
    ffn._impl._forward_loop(x, out, CALLS)
    cpp_us.append((time.perf_counter() - start) / CALLS * 1e6)
p, c = min(python_us), min(cpp_us)
print("glass d=%d f=%d, 1 token, 1 thread: python %.2f us/call, C++ %.2f us/call, "
      "binding adds %.2f us (%.0f %%)" % (D, F, p, c, p - c, 100 * (p - c) / c))
