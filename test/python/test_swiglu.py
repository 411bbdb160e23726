"""The Python module against a numpy float64 reference: odd shapes, leading
dimensions, both layouts, every precision this CPU runs, checkpoints, bad
input (the documented exception, `out` untouched) and concurrent callers.
Run by ctest (entry `python`) with PYTHONPATH=build/python."""

import json
import struct

import numpy as np
import pytest

import swiglu
from reference import concurrent_results, random_block, reference, relative_error, tolerance


def test_version_is_the_librarys():
    assert swiglu.__version__ == swiglu.version()
    assert swiglu.__version__.count(".") == 2  # "major.minor.patch", as CMake's project()


def test_the_seeds_known_values():
    # glassllm: W1 (gate), W3 (up), W2 (down) stored (in, out); d = 1, f = 3.
    w1 = np.array([[-1.0, 0.0, 1.0]], np.float32)
    w3 = np.array([[2.0, 3.0, 4.0]], np.float32)
    w2 = np.ones((3, 1), np.float32)
    ffn = swiglu.Ffn(w1, w3, w2, layout="in_out", threads=1)
    x = np.ones((1, 1), np.float32)
    trace = ffn.trace(x)
    np.testing.assert_allclose(trace["ffn.gate"], [[-1, 0, 1]])
    np.testing.assert_allclose(trace["ffn.act"], [[-0.537883, 0.0, 2.924234]], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ffn(x), [[2.386351]], rtol=1e-6)
    assert set(trace) == {"ffn.gate", "ffn.up", "ffn.act", "ffn.down"}


@pytest.mark.parametrize("d,f", [(1, 1), (7, 13), (33, 7), (128, 341), (341, 33)])
@pytest.mark.parametrize("layout", ["out_in", "in_out"])
@pytest.mark.parametrize("lead", [(), (5,), (2, 3)])
def test_matches_the_float64_reference(d, f, layout, lead):
    w = random_block(d, f, layout, seed=d * 1000 + f)
    ffn = swiglu.Ffn(*w, layout=layout, threads=2)
    assert (ffn.d, ffn.f) == (d, f)
    x = np.random.default_rng(f).uniform(-1, 1, lead + (d,)).astype(np.float32)
    y = ffn(x)
    assert y.shape == x.shape and y.dtype == np.float32
    assert relative_error(y, reference(x, *w, layout=layout)) <= tolerance(d, f)


def test_every_precision_runs_or_says_why():
    d, f = 64, 96
    w = random_block(d, f)
    x = np.random.default_rng(1).uniform(-1, 1, (4, d)).astype(np.float32)
    ref = reference(x, *w)
    # The formats' errors relative to max |y| (docs/formats.md).
    bounds = {"f32": tolerance(d, f), "bf16": 3e-2, "int8": 5e-2, "q8_0": 5e-2, "q4_0": 2e-1,
              "q4_k": 2e-1, "q5_k": 1e-1, "q6_k": 5e-2}
    assert set(bounds) == set(swiglu.dtypes)
    for dtype, bound in bounds.items():
        try:
            ffn = swiglu.Ffn(*w, dtype=dtype, threads=1)
        except swiglu.Error as e:
            assert e.status == "unsupported", (dtype, e)
            continue
        assert ffn.implementation["dtype"] == dtype
        assert relative_error(ffn(x), ref) <= bound, dtype
    with pytest.raises(ValueError, match="dtype must be one of"):
        swiglu.Ffn(*w, dtype="fp8")
    with pytest.raises(ValueError, match="layout must be"):
        swiglu.Ffn(*w, layout="rows")


def test_out_in_place_and_buffers_without_copy():
    w = random_block(16, 24)
    ffn = swiglu.Ffn(*w, threads=1)
    x = np.random.default_rng(2).uniform(-1, 1, (3, 16)).astype(np.float32)
    expected = ffn(x)
    out = np.empty_like(x)
    assert ffn.forward(x, out=out) is out
    np.testing.assert_array_equal(out, expected)
    same = x.copy()
    ffn.forward(same, out=same)  # in place
    np.testing.assert_array_equal(same, expected)
    # The buffer protocol: a memoryview of float32 reads without a copy.
    np.testing.assert_array_equal(ffn(memoryview(x)), expected)


def test_bad_input_raises_and_leaves_out_untouched():
    w = random_block(8, 12)
    ffn = swiglu.Ffn(*w, threads=1)
    x = np.ones((2, 8), np.float32)
    out = np.full((2, 8), 7.0, np.float32)
    cases = [
        (TypeError, "float32", lambda: ffn.forward(x.astype(np.float64), out=out)),
        (ValueError, r"shape \(\.\.\., 8\)", lambda: ffn.forward(np.ones((2, 9), np.float32), out=out)),
        (ValueError, "C-contiguous", lambda: ffn.forward(np.ones((8, 2), np.float32).T, out=out)),
        (TypeError, "out must be a float32", lambda: ffn.forward(x, out=out.astype(np.float64))),
        (ValueError, "out must have x's shape", lambda: ffn.forward(x, out=np.empty((3, 8), np.float32))),
        (ValueError, "out must have x's shape", lambda: ffn.forward(x, out=np.empty((1, 16), np.float32))),
        (TypeError, "buffer protocol", lambda: ffn.forward("not an array")),
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match=message):
            call()
        assert np.all(out == 7.0)
    # copy=True converts what it can.
    np.testing.assert_allclose(ffn.forward(x.astype(np.float64).T.T, copy=True), ffn(x))
    np.testing.assert_allclose(ffn.forward(np.ones((8, 2)).T, copy=True), ffn(x))
    with pytest.raises(ValueError, match="must be 2-D"):
        swiglu.Ffn(w[0].ravel(), w[1], w[2])
    with pytest.raises(swiglu.Error) as e:
        swiglu.Ffn(w[0], w[1][:5], w[2])
    assert e.value.status == "invalid_argument" and "up" in str(e.value)


def test_concurrent_callers_get_the_serial_bits():
    w = random_block(256, 704)
    ffn = swiglu.Ffn(*w, threads=2)
    xs = [np.random.default_rng(i).uniform(-1, 1, (1 + i, 256)).astype(np.float32) for i in range(8)]
    serial = [ffn(x) for x in xs]
    for got, want in zip(concurrent_results(ffn, xs), serial):
        np.testing.assert_array_equal(got, want)


def write_safetensors(path, tensors):
    """tensors: name -> float32 array, stored as F32."""
    header, data, offset = {}, b"", 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_load_a_checkpoint(tmp_path):
    d, f = 12, 20
    blocks = [random_block(d, f, seed=s) for s in range(2)]
    tensors = {}
    for layer, (g, u, dn) in enumerate(blocks):
        p = "model.layers.%d.mlp." % layer
        tensors.update({p + "gate_proj.weight": g, p + "up_proj.weight": u, p + "down_proj.weight": dn})
    path = tmp_path / "model.safetensors"
    write_safetensors(path, tensors)
    x = np.random.default_rng(3).uniform(-1, 1, (4, d)).astype(np.float32)
    for layer in (0, 1):
        ffn = swiglu.load(path, layer=layer, threads=1)
        np.testing.assert_array_equal(ffn(x), swiglu.Ffn(*blocks[layer], threads=1)(x))
    ffn = swiglu.load(str(path), block="model.layers.1.mlp.", dtype="bf16")
    assert ffn.implementation["dtype"] == "bf16"
    # The module's name, as PyTorch prints it (no trailing '.'), names it too.
    np.testing.assert_array_equal(swiglu.load(path, block="model.layers.1.mlp", threads=1)(x),
                                  swiglu.Ffn(*blocks[1], threads=1)(x))
    with pytest.raises(swiglu.Error, match="holds 2 layers") as e:
        swiglu.load(path)
    assert e.value.status == "invalid_argument"
    with pytest.raises(swiglu.Error, match="cannot open"):
        swiglu.load(tmp_path / "missing.safetensors")


def test_load_errors_name_pythons_arguments(tmp_path):
    """The loader's errors say which selector tells blocks apart: in
    Python's words (layer=, expert=, block=), never the CLI's --flags."""
    d, f = 8, 12
    g, u, dn = random_block(d, f)

    def expect(path, words, **selector):
        with pytest.raises(swiglu.Error) as e:
            swiglu.load(path, **selector)
        message = str(e.value)
        assert all(w in message for w in words) and "--" not in message, message

    layers = tmp_path / "layers.safetensors"
    write_safetensors(layers, {"model.layers.%d.mlp.%s_proj.weight" % (n, r): w
                               for n in (0, 1) for r, w in zip(("gate", "up", "down"), (g, u, dn))})
    expect(layers, ["holds 2 layers", "(layer=N)"])
    blocks = tmp_path / "blocks.safetensors"
    write_safetensors(blocks, {"%s.%s_proj.weight" % (b, r): w for b in ("a", "b")
                               for r, w in zip(("gate", "up", "down"), (g, u, dn))})
    expect(blocks, ["holds 2 SwiGLU blocks", "(block=PREFIX)"])
    experts = tmp_path / "experts.safetensors"  # no config.json beside it
    moe = "model.layers.0.block_sparse_moe."
    write_safetensors(experts, {moe + "gate.weight": np.ones((2, d), np.float32),
                                **{moe + "experts.%d.%s.weight" % (e, r): w for e in (0, 1)
                                   for r, w in zip(("w1", "w3", "w2"), (g, u, dn))}})
    expect(experts, ["config.json", "(expert=E)"], layer=0)
    expect(experts, ["holds 2 experts", "(expert=E)"], block="")
    stacked = tmp_path / "stacked.gguf"  # 2 experts stacked in each tensor
    write_gguf(stacked, [("blk.0.ffn_%s_exps.weight" % r, ne + [2], 0, bytes(4 * d * f * 2))
                         for r, ne in (("gate", [d, f]), ("up", [d, f]), ("down", [f, d]))])
    expect(stacked, ["stacked", "(layer=N, expert=E)"], block="blk.0.")


def write_gguf(path, tensors):
    """tensors: (name, ne, ggml type, raw bytes), GGUF version 3, aligned to 32."""
    infos, data = b"", b""
    for name, ne, ggml_type, raw in tensors:
        data += b"\0" * (-len(data) % 32)
        infos += (struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(ne))
                  + b"".join(struct.pack("<Q", n) for n in ne) + struct.pack("<IQ", ggml_type, len(data)))
        data += raw
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0) + infos
    path.write_bytes(head + b"\0" * (-len(head) % 32) + data)


def test_k_quants_and_each_weights_own_format(tmp_path):
    d, f = 256, 512
    w = random_block(d, f)
    x = np.random.default_rng(2).uniform(-1, 1, (3, d)).astype(np.float32)
    ffn = swiglu.Ffn(*w, dtype="q4_k", down_dtype="q6_k", threads=1)
    assert (ffn.implementation["dtype"], ffn.implementation["down_dtype"]) == ("q4_k", "q6_k")
    assert "down q6_k" in ffn.info()
    assert relative_error(ffn(x), reference(x, *w)) <= 2e-1
    with pytest.raises(swiglu.Error, match="down_dtype f32"):
        swiglu.Ffn(*w, dtype="q4_k", down_dtype="f32")
    with pytest.raises(ValueError, match="dtype must be one of"):
        swiglu.Ffn(*w, dtype="q4_k", down_dtype="q7_k")
    with pytest.raises(ValueError, match="for swiglu.load"):
        swiglu.Ffn(*w, dtype="stored")
    assert "q4_k" in swiglu.Ffn.__doc__ and "q6_k" in swiglu.load.__doc__

    # A Q4_K_M-style GGUF file (gate, up Q4_K; down Q6_K) of zero super-blocks:
    # dtype="stored" keeps each weight's format, the default converts to f32.
    gguf = tmp_path / "q4_k_m.gguf"
    write_gguf(gguf, [("blk.0.ffn_gate.weight", [d, f], 12, bytes(144 * f)),
                      ("blk.0.ffn_up.weight", [d, f], 12, bytes(144 * f)),
                      ("blk.0.ffn_down.weight", [f, d], 14, bytes(210 * 2 * d))])
    stored = swiglu.load(gguf, dtype="stored", threads=1)
    assert (stored.implementation["dtype"], stored.implementation["down_dtype"]) == ("q4_k", "q6_k")
    np.testing.assert_array_equal(stored(x), np.zeros_like(x))
    assert swiglu.load(gguf, threads=1).implementation["dtype"] == "f32"
    mixed = swiglu.load(gguf, dtype="q8_0", down_dtype="q6_k", threads=1)
    assert (mixed.implementation["dtype"], mixed.implementation["down_dtype"]) == ("q8_0", "q6_k")

    # Quantising from a safetensors file's f32 weights.
    st = tmp_path / "block.safetensors"
    write_safetensors(st, {"gate_proj.weight": w[0], "up_proj.weight": w[1], "down_proj.weight": w[2]})
    q = swiglu.load(st, dtype="q4_k", threads=1)
    np.testing.assert_array_equal(q(x), swiglu.Ffn(*w, dtype="q4_k", threads=1)(x))
    assert swiglu.load(st, dtype="stored", threads=1).implementation["dtype"] == "f32"


def reference_backward(x, dy, w_gate, w_up, w_down, layout="out_in"):
    """float64 dx and the weight gradients, each in the weights' layout."""
    x = np.asarray(x, np.float64).reshape(-1, np.shape(x)[-1])
    dy = np.asarray(dy, np.float64).reshape(x.shape)
    g, u, d = (np.asarray(w, np.float64) for w in (w_gate, w_up, w_down))
    if layout == "out_in":
        g, u, d = g.T, u.T, d.T  # (in, out)
    gate, up = x @ g, x @ u
    s = 1 / (1 + np.exp(-gate))
    dact = dy @ d.T
    dgate = dact * up * s * (1 + gate * (1 - s))
    dup = dact * gate * s
    act = gate * s * up
    grads = {"gate": x.T @ dgate, "up": x.T @ dup, "down": act.T @ dy}
    if layout == "out_in":
        grads = {k: v.T for k, v in grads.items()}
    return dgate @ g.T + dup @ u.T, grads


def backward_tolerance(d, f, tokens):
    # test/support/reference_backward.hpp: two dot products deep, of lengths
    # among d, 2f and tokens.
    return 16 * 2.0 ** -24 * (np.sqrt(d) + np.sqrt(2 * f) + np.sqrt(tokens)) + 1e-6


@pytest.mark.parametrize("d,f", [(1, 1), (7, 13), (33, 61), (128, 341)])
@pytest.mark.parametrize("layout", ["out_in", "in_out"])
def test_backward_matches_the_float64_reference(d, f, layout):
    w = random_block(d, f, layout, seed=d + f)
    ffn = swiglu.Ffn(*w, layout=layout, threads=2)
    rng = np.random.default_rng(d)
    x = rng.uniform(-1, 1, (3, 5, d)).astype(np.float32)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    want_dx, want = reference_backward(x, dy, *w, layout=layout)
    tol = backward_tolerance(d, f, 15)
    y, saved = ffn.forward_for_backward(x)
    np.testing.assert_array_equal(y, ffn(x))
    for kept in (saved, None):  # saved activations, or recomputed
        dx, grads = ffn.backward(x, dy, kept)
        assert dx.shape == x.shape
        assert relative_error(dx.reshape(-1, d), want_dx) <= tol
        for name in ("gate", "up", "down"):
            assert grads[name].shape == ffn.gradient_shape(name) == want[name].shape
            assert relative_error(grads[name], want[name]) <= tol, name


def test_backward_known_values_accumulate_and_dx_alone():
    # The seed: gate = [-1, 0, 1], up = [2, 3, 4], x = 1, dy = 1 (out_in, d = 1, f = 3).
    ffn = swiglu.Ffn([[-1.0], [0.0], [1.0]], [[2.0], [3.0], [4.0]], [[1.0, 1.0, 1.0]], threads=1)
    x = np.ones((1, 1), np.float32)
    dx, grads = ffn.backward(x, x)
    # The seed's values have 6 decimals: within 1e-6.
    np.testing.assert_allclose(grads["gate"].ravel(), [0.144659, 1.5, 3.710682], rtol=0, atol=1e-6)
    np.testing.assert_allclose(grads["up"].ravel(), [-0.268941, 0, 0.731059], rtol=0, atol=1e-6)
    np.testing.assert_allclose(grads["down"].ravel(), [-0.537883, 0, 2.924234], rtol=0, atol=1e-6)
    total = {k: np.full(v.shape, 1.0, np.float32) for k, v in grads.items()}
    ffn.backward(x, x, grads=total, accumulate=True)
    for k in grads:
        np.testing.assert_allclose(total[k], grads[k] + 1, rtol=1e-6)
    dx_only, none = ffn.backward(x, x, grads={})
    assert none == {} and np.array_equal(dx_only, dx)


def test_backward_bad_input():
    ffn = swiglu.Ffn(*random_block(8, 12), threads=1)
    x = np.ones((2, 8), np.float32)
    with pytest.raises(ValueError, match="dy must have x's shape"):
        ffn.backward(x, np.ones((3, 8), np.float32))
    with pytest.raises(ValueError, match=r"grads\['gate'\] must have shape \(12, 8\)"):
        ffn.backward(x, x, grads={"gate": np.zeros((8, 12), np.float32)})
    with pytest.raises(ValueError, match="grads keys"):
        ffn.backward(x, x, grads={"w1": np.zeros((12, 8), np.float32)})
    with pytest.raises(ValueError, match="saved"):
        ffn.backward(x, x, saved=np.zeros(5, np.float32))
    with pytest.raises(swiglu.Error, match="dtype f32") as e:
        swiglu.Ffn(*random_block(8, 12), dtype="bf16").backward(x, x)
    assert e.value.status == "unsupported"
