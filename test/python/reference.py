"""What the Python suites check against: a numpy float64 SwiGLU block, the
f32 error bound, and random blocks scaled like trained ones."""

import numpy as np


def silu(z):
    return z / (1.0 + np.exp(-z))


def reference(x, w_gate, w_up, w_down, layout="out_in"):
    """float64 y for weights stored as `layout`."""
    x = np.asarray(x, dtype=np.float64)
    g, u, d = (np.asarray(w, dtype=np.float64) for w in (w_gate, w_up, w_down))
    if layout == "out_in":
        g, u, d = g.T, u.T, d.T
    return (silu(x @ g) * (x @ u)) @ d


def tolerance(d, f):
    # The C++ suites' f32 bound (test/support/reference.hpp): each output is
    # two dot products deep; 16 u (sqrt(d) + sqrt(f)) relative to max |y|.
    return 16 * 2.0 ** -24 * (np.sqrt(d) + np.sqrt(f))


def relative_error(y, ref):
    scale = np.max(np.abs(ref))
    return 0.0 if scale == 0 else float(np.max(np.abs(y - ref)) / scale)


def random_block(d, f, layout="out_in", seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(f, d), (f, d), (d, f)] if layout == "out_in" else [(d, f), (d, f), (f, d)]
    return [(rng.uniform(-1, 1, s) / np.sqrt(s[1 if layout == "out_in" else 0])).astype(np.float32)
            for s in shapes]


def concurrent_results(fn, inputs, calls=20):
    """fn(inputs[i]) called `calls` times on a thread per input, all at once:
    the last result of each (for comparing with serial calls)."""
    import threading

    results = [None] * len(inputs)

    def run(i):
        for _ in range(calls):
            results[i] = fn(inputs[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
