"""The mixture-of-experts faces (swiglu.route, swiglu.Experts,
swiglu.MoeLayer) against a numpy float64 reference: every router option,
leading dimensions, both layouts, int32 and int64 ids, the same bits for
any thread count, in place, concurrent callers, and bad input (the
documented exception, `out` untouched). Run by ctest (entry `python`)."""

import numpy as np
import pytest

import swiglu
from reference import concurrent_results, reference, tolerance

U = 2.0 ** -24


def reference_route(logits, k, score="softmax", normalize=False, groups=1, top_groups=1,
                    group_score="max", scaling=1.0, bias=None):
    """float64 (ids, weights) as swiglu/moe.hpp defines them, one token at a time."""
    logits = np.asarray(logits, np.float64)
    lead, E = logits.shape[:-1], logits.shape[-1]
    rows = logits.reshape(-1, E)
    ids = np.empty((rows.shape[0], k), np.int64)
    weights = np.empty((rows.shape[0], k), np.float64)
    for t, row in enumerate(rows):
        if score == "softmax":
            s = np.exp(row - row.max())
            s /= s.sum()
        else:
            s = 1 / (1 + np.exp(-row))
        key = s + (0 if bias is None else np.asarray(bias, np.float64))
        candidates = np.arange(E)
        if groups > 1 and top_groups < groups:
            size = E // groups
            g = key.reshape(groups, size)
            top2 = np.sort(g, axis=1)[:, ::-1]
            group_key = top2[:, 0] if group_score == "max" else top2[:, 0] + top2[:, 1]
            kept = np.argsort(-group_key, kind="stable")[:top_groups]
            candidates = np.concatenate([np.arange(i * size, (i + 1) * size) for i in sorted(kept)])
        # Best key first, ties to the lower id (a stable sort of the ascending ids).
        chosen = candidates[np.argsort(-key[candidates], kind="stable")[:k]]
        w = s[chosen]
        if normalize:
            w = w / (w.sum() + (1e-20 if score == "sigmoid" else 0.0))
        ids[t], weights[t] = chosen, w * np.float64(np.float32(scaling))
    return ids.reshape(lead + (k,)), weights.reshape(lead + (k,))


def stacked(E, d, f, layout="out_in", seed=0):
    """E experts' (w_gate, w_up, w_down), stacked, scaled like trained ones."""
    rng = np.random.default_rng(seed)
    gate, up = (rng.uniform(-1, 1, (E, f, d)) / np.sqrt(d) for _ in range(2))
    down = rng.uniform(-1, 1, (E, d, f)) / np.sqrt(f)
    ws = [w.astype(np.float32) for w in (gate, up, down)]
    return ws if layout == "out_in" else [np.ascontiguousarray(w.transpose(0, 2, 1)) for w in ws]


def reference_experts(x, ids, weights, ws, layout="out_in"):
    """float64 y, and each token's error scale: sum over j of |w| max|expert_id(x)|."""
    d = x.shape[-1]
    xs = np.asarray(x, np.float64).reshape(-1, d)
    ids = ids.reshape(xs.shape[0], -1)
    weights = np.asarray(weights, np.float64).reshape(ids.shape)
    y = np.zeros_like(xs)
    scale = np.zeros(xs.shape[0])
    for t in range(xs.shape[0]):
        for j in range(ids.shape[1]):
            e = ids[t, j]
            r = reference(xs[t:t + 1], *(w[e] for w in ws), layout=layout)[0]
            y[t] += weights[t, j] * r
            scale[t] += abs(weights[t, j]) * np.max(np.abs(r))
    return y.reshape(x.shape), scale


def check_experts(y, x, ids, weights, ws, layout="out_in"):
    ref, scale = reference_experts(x, ids, weights, ws, layout)
    d, f = x.shape[-1], ws[0].shape[1 if layout == "out_in" else 2]
    k = ids.shape[-1]
    err = np.max(np.abs(y.reshape(-1, d) - ref.reshape(-1, d)), axis=1)
    assert np.all(err <= (tolerance(d, f) + 2 * k * U) * scale + 1e-30), (err, scale)


RULES = [
    dict(k=1),
    dict(k=2, normalize=True),                                   # Mixtral
    dict(k=3, scaling=2.5),
    dict(k=4, groups=4, top_groups=2, scaling=16.0),             # DeepSeek-V2
    dict(k=4, score="sigmoid", normalize=True, groups=4, top_groups=2,
         group_score="top2_sum", scaling=2.5, bias=True),        # DeepSeek-V3
    dict(k=2, score="sigmoid"),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: ",".join("%s=%s" % kv for kv in r.items()))
@pytest.mark.parametrize("lead", [(), (5,), (2, 3)])
def test_route_matches_the_float64_reference(rule, lead):
    E = 16
    rng = np.random.default_rng(len(lead) * 10 + rule["k"])
    logits = rng.uniform(-4, 4, lead + (E,)).astype(np.float32)
    rule = dict(rule)
    if rule.pop("bias", False):
        rule["bias"] = rng.uniform(-0.5, 0.5, E).astype(np.float32)
    ids, weights = swiglu.route(logits, **rule)
    want_ids, want_weights = reference_route(logits, **rule)
    k = rule["k"]
    assert ids.dtype == np.int32 and weights.dtype == np.float32
    assert ids.shape == weights.shape == lead + (k,)
    np.testing.assert_array_equal(ids, want_ids)
    # Each weight is the double value rounded once: within an ulp of float64's.
    assert np.all(np.abs(weights - want_weights) <= 2 * U * np.abs(want_weights))


def test_route_ties_go_to_the_lower_id_and_zero_tokens_route_nothing():
    ids, weights = swiglu.route(np.zeros((2, 8), np.float32), 3)
    np.testing.assert_array_equal(ids, [[0, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(weights, np.full((2, 3), 0.125, np.float32))
    ids, weights = swiglu.route(np.zeros((0, 8), np.float32), 2)
    assert ids.shape == weights.shape == (0, 2)
    # The bias chooses; the weights are the scores alone.
    bias = np.array([0, 0, 0, 1, 0, 0, 0, 0], np.float32)
    ids, weights = swiglu.route(np.zeros(8, np.float32), 1, bias=bias)
    assert ids.tolist() == [3] and weights.tolist() == [0.125]


def test_route_bad_input():
    logits = np.random.default_rng(1).uniform(-1, 1, (3, 8)).astype(np.float32)
    cases = [
        (TypeError, "logits must be float32, got float64", lambda: swiglu.route(logits.astype(np.float64), 2)),
        (ValueError, "logits is not C-contiguous", lambda: swiglu.route(np.asfortranarray(logits), 2)),
        (ValueError, r"logits must have shape \(\.\.\., E\) with E >= 1", lambda: swiglu.route(logits[:, :0], 1)),
        (TypeError, "k must be an integer, got float", lambda: swiglu.route(logits, 1.5)),
        (ValueError, "score must be 'softmax' or 'sigmoid', got 'relu'", lambda: swiglu.route(logits, 2, score="relu")),
        (ValueError, "group_score must be 'max' or 'top2_sum'", lambda: swiglu.route(logits, 2, group_score="sum")),
        (ValueError, r"bias must have shape \(E,\) = \(8,\), got \(7,\)",
         lambda: swiglu.route(logits, 2, bias=np.zeros(7, np.float32))),
        (TypeError, "bias must be float32", lambda: swiglu.route(logits, 2, bias=np.zeros(8))),
        (TypeError, "logits must be a numpy array", lambda: swiglu.route("logits", 2)),
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match=message):
            call()
    for message, kwargs in [
        (r"top_k must be in \[1, experts = 8\] \(got 0\)", dict(k=0)),
        (r"top_k must be in \[1, experts = 8\] \(got 9\)", dict(k=9)),
        (r"top_k must be in \[1, experts = 8\] \(got -1\)", dict(k=-1)),
        (r"groups must be >= 1 and divide experts = 8 \(got 3\)", dict(k=2, groups=3)),
        (r"top_groups must be in \[1, groups = 4\] \(got 5\)", dict(k=2, groups=4, top_groups=5)),
        (r"scaling must be finite \(got \+inf\)", dict(k=2, scaling=1e40)),
    ]:
        with pytest.raises(swiglu.Error, match=message) as e:
            swiglu.route(logits, **kwargs)
        assert e.value.status == "invalid_argument"
    bad = logits.copy()
    bad[1, 2] = np.nan
    with pytest.raises(swiglu.Error, match=r"logits\[token 1, expert 2\] is NaN"):
        swiglu.route(bad, 2)


@pytest.mark.parametrize("E,d,f", [(1, 1, 1), (4, 7, 13), (8, 33, 61)])
@pytest.mark.parametrize("layout", ["out_in", "in_out"])
@pytest.mark.parametrize("lead", [(), (5,), (2, 3)])
def test_experts_match_the_float64_reference(E, d, f, layout, lead):
    ws = stacked(E, d, f, layout, seed=E + d)
    experts = swiglu.Experts(*ws, layout=layout, threads=2)
    assert (experts.experts, experts.d, experts.f, experts.threads) == (E, d, f, 2)
    assert experts.implementation["dtype"] == "f32"
    rng = np.random.default_rng(f)
    x = rng.uniform(-1, 1, lead + (d,)).astype(np.float32)
    k = min(E, 3)
    ids, weights = swiglu.route(rng.uniform(-2, 2, lead + (E,)).astype(np.float32), k)
    y = experts(x, ids, weights)
    assert y.shape == x.shape and y.dtype == np.float32
    check_experts(y, x, ids, weights, ws, layout)
    # int64 ids (what argsort gives) are narrowed: the same bits.
    np.testing.assert_array_equal(experts(x, ids.astype(np.int64), weights), y)
    # Repeated ids and negative weights are the caller's to give.
    ids = rng.integers(0, E, lead + (4,)).astype(np.int32)
    weights = rng.uniform(-1.5, 1.5, lead + (4,)).astype(np.float32)
    check_experts(experts(x, ids, weights), x, ids, weights, ws, layout)


def test_experts_same_bits_for_any_thread_count_in_place_and_out():
    E, d, f = 8, 64, 96
    ws = stacked(E, d, f, seed=3)
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (19, d)).astype(np.float32)
    ids, weights = swiglu.route(rng.uniform(-2, 2, (19, E)).astype(np.float32), 2, normalize=True)
    want = swiglu.Experts(*ws, threads=1)(x, ids, weights)
    for threads in (2, 3):
        experts = swiglu.Experts(*ws, threads=threads)
        np.testing.assert_array_equal(experts(x, ids, weights), want)
        out = np.empty_like(x)
        assert experts.forward(x, ids, weights, out=out) is out
        np.testing.assert_array_equal(out, want)
        same = x.copy()
        assert experts(same, ids, weights, out=same) is same  # in place
        np.testing.assert_array_equal(same, want)
    # Several Python threads on one Experts: each gets the serial bits.
    experts = swiglu.Experts(*ws, threads=2)
    xs = [x[:1 + i] for i in range(6)]
    got = concurrent_results(lambda xi: experts(xi, ids[:len(xi)], weights[:len(xi)]), xs)
    for xi, yi in zip(xs, got):
        np.testing.assert_array_equal(yi, want[:len(xi)])


def test_experts_in_block_formats_and_their_refusals():
    E, d, f = 4, 64, 96
    ws = stacked(E, d, f, seed=5)
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (3, d)).astype(np.float32)
    ids, weights = swiglu.route(rng.uniform(-2, 2, (3, E)).astype(np.float32), 2)
    ref, scale = reference_experts(x, ids, weights, ws)
    for dtype, bound in (("bf16", 3e-2), ("q8_0", 5e-2), ("q4_0", 2e-1)):
        experts = swiglu.Experts(*ws, dtype=dtype, threads=1)
        assert experts.implementation["dtype"] == dtype
        err = np.max(np.abs(experts(x, ids, weights) - ref), axis=1)
        assert np.all(err <= bound * scale), dtype
    # float64 weights are converted at construction, as Ffn's are.
    np.testing.assert_array_equal(
        swiglu.Experts(*(w.astype(np.float64) for w in ws), threads=1)(x, ids, weights),
        swiglu.Experts(*ws, threads=1)(x, ids, weights))
    g, u, dn = ws
    for kind, message, call in [
        (ValueError, r"w_gate must be 3-D \(E, f, d\) for layout 'out_in', got 2 dimensions",
         lambda: swiglu.Experts(g[0], u, dn)),
        (ValueError, r"w_up must have w_gate's shape \(E, f, d\) = \(4, 96, 64\) for layout "
                     r"'out_in', got \(4, 95, 64\)", lambda: swiglu.Experts(g, u[:, 1:], dn)),
        (ValueError, r"w_down must have shape \(E, d, f\) = \(4, 64, 96\) for layout 'out_in', "
                     r"got \(4, 96, 64\)", lambda: swiglu.Experts(g, u, dn.transpose(0, 2, 1))),
        (ValueError, r"w_down must have shape \(E, f, d\) = \(4, 96, 64\) for layout 'in_out'",
         lambda: swiglu.Experts(g.transpose(0, 2, 1), u.transpose(0, 2, 1), dn, layout="in_out")),
        (ValueError, "layout must be", lambda: swiglu.Experts(g, u, dn, layout="rows")),
        (ValueError, "dtype must be one of", lambda: swiglu.Experts(g, u, dn, dtype="fp8")),
        (TypeError, "w_up must hold numbers", lambda: swiglu.Experts(g, u.astype(str), dn)),
    ]:
        with pytest.raises(kind, match=message):
            call()
    with pytest.raises(swiglu.Error, match="threads") as e:
        swiglu.Experts(g, u, dn, threads=-1)
    assert e.value.status == "invalid_argument"
    with pytest.raises(swiglu.Error, match="experts must be >= 1"):
        swiglu.Experts(g[:0], u[:0], dn[:0])


def test_experts_bad_input_raises_and_leaves_out_untouched():
    E, d, f = 4, 8, 12
    experts = swiglu.Experts(*stacked(E, d, f, seed=7), threads=1)
    x = np.ones((3, d), np.float32)
    ids = np.array([[0, 1], [2, 3], [3, 0]], np.int32)
    weights = np.full((3, 2), 0.5, np.float32)
    out = np.full((3, d), 7.0, np.float32)
    bad_id, huge_id, nan_weight = ids.copy(), ids.astype(np.int64), weights.copy()
    bad_id[1, 1] = 4
    huge_id[2, 0] = 2 ** 40
    nan_weight[0, 1] = np.nan
    cases = [
        (TypeError, "x must be float32, got float64", lambda: experts(x.astype(np.float64), ids, weights, out=out)),
        (ValueError, r"x must have shape \(\.\.\., 8\), got \(3, 9\)",
         lambda: experts(np.ones((3, 9), np.float32), ids, weights, out=out)),
        (ValueError, "x is not C-contiguous", lambda: experts(np.ones((d, 3), np.float32).T, ids, weights, out=out)),
        (TypeError, "ids must be int32 or int64, got float32", lambda: experts(x, weights, weights, out=out)),
        (TypeError, "ids must be int32 or int64, got int16", lambda: experts(x, ids.astype(np.int16), weights, out=out)),
        (ValueError, r"ids must have shape x.shape\[:-1\] \+ \(k,\)", lambda: experts(x, ids[:2], weights, out=out)),
        (ValueError, r"ids must have shape x.shape\[:-1\] \+ \(k,\)", lambda: experts(x, ids.ravel(), weights, out=out)),
        (ValueError, "ids is not C-contiguous", lambda: experts(x, np.ones((2, 3), np.int32).T, weights, out=out)),
        (TypeError, "weights must be float32, got float64", lambda: experts(x, ids, weights.astype(np.float64), out=out)),
        (ValueError, r"weights must have ids' shape \(3, 2\), got \(3, 1\)",
         lambda: experts(x, ids, np.ones((3, 1), np.float32), out=out)),
        (TypeError, "out must be a float32", lambda: experts(x, ids, weights, out=out.astype(np.float64))),
        (ValueError, "out must have x's shape", lambda: experts(x, ids, weights, out=np.empty((3, 9), np.float32))),
        (swiglu.Error, r"ids\[t = 1, j = 1\] = 4 is not an expert: ids must be in \[0, 4\)",
         lambda: experts(x, bad_id, weights, out=out)),
        (swiglu.Error, r"ids\[t = 2, j = 0\] = 1099511627776 is not an expert: ids must be in \[0, 4\)",
         lambda: experts(x, huge_id, weights, out=out)),
        (swiglu.Error, r"weights\[t = 0, j = 1\] = nan must be finite", lambda: experts(x, ids, nan_weight, out=out)),
        (swiglu.Error, "x and y overlap", lambda: experts(out[:2], ids[:2], weights[:2], out=out[1:])),
        (swiglu.Error, "k must be >= 1", lambda: experts(x, ids[:, :0], weights[:, :0], out=out)),
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match=message) as e:
            call()
        if kind is swiglu.Error:
            assert e.value.status == "invalid_argument"
        assert np.all(out == 7.0), message
    # No tokens: nothing to do, whatever k.
    assert experts(x[:0], ids[:0], weights[:0]).shape == (0, d)


def moe_model(E, d, f, fs, seed):
    rng = np.random.default_rng(seed)
    router = (rng.uniform(-1, 1, (E, d)) * 4 / np.sqrt(d)).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, E).astype(np.float32)
    shared = [w[0] for w in stacked(1, d, fs, seed=seed + 1)]
    shared_gate = (rng.uniform(-1, 1, d) / np.sqrt(d)).astype(np.float32)
    return router, stacked(E, d, f, seed=seed + 2), bias, shared, shared_gate


@pytest.mark.parametrize("rule", [dict(k=2, normalize=True),
                                  dict(k=4, score="sigmoid", normalize=True, groups=4, top_groups=2,
                                       group_score="top2_sum", scaling=2.5)],
                         ids=["mixtral", "deepseek-v3"])
@pytest.mark.parametrize("with_shared", ["none", "shared", "gated"])
def test_moe_layer_matches_the_float64_reference(rule, with_shared):
    E, d, f, fs = 16, 48, 40, 72
    router, ws, bias, shared, shared_gate = moe_model(E, d, f, fs, seed=11)
    kwargs = dict(rule)
    if rule.get("score") == "sigmoid":
        kwargs["bias"] = bias  # DeepSeek-V3's e_score_correction_bias
    routing = dict(kwargs)
    if with_shared != "none":
        kwargs["shared"] = tuple(shared)
    if with_shared == "gated":
        kwargs["shared_gate"] = shared_gate.reshape(1, d)  # as Qwen2-MoE stores it
    layer = swiglu.MoeLayer(router, *ws, threads=2, **kwargs)
    assert (layer.d, layer.k, layer.has_shared) == (d, rule["k"], with_shared != "none")
    assert (layer.experts.experts, layer.experts.f) == (E, f)
    x = np.random.default_rng(12).uniform(-1, 1, (2, 3, d)).astype(np.float32)

    # The router: float64 logits choose the same experts (no near-ties at
    # these seeds); the weights differ by what f32 logits do to them.
    ids, weights = layer.route(x)
    assert ids.shape == weights.shape == (2, 3, rule["k"]) and ids.dtype == np.int32
    logits = x.astype(np.float64) @ router.T.astype(np.float64)
    want_ids, want_weights = reference_route(logits, **routing)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-5)

    # The layer: its experts on its own routing, plus the shared block.
    ref, scale = reference_experts(x, ids, weights, ws)
    if with_shared != "none":
        s = reference(x, *shared)
        if with_shared == "gated":
            s = s / (1 + np.exp(-(x.astype(np.float64) @ shared_gate.astype(np.float64))))[..., None]
        ref = ref + s
        scale = scale + np.max(np.abs(s.reshape(-1, d)), axis=1)
    y = layer(x)
    assert y.shape == x.shape and y.dtype == np.float32
    err = np.max(np.abs(y - ref).reshape(-1, d), axis=1)
    assert np.all(err <= (tolerance(d, max(f, fs)) + 4 * rule["k"] * U) * scale)


def test_moe_layer_threads_in_place_layouts_and_its_experts():
    E, d, f, fs = 8, 32, 24, 40
    router, ws, bias, shared, shared_gate = moe_model(E, d, f, fs, seed=21)
    kwargs = dict(k=2, normalize=True, shared=tuple(shared), shared_gate=shared_gate)
    x = np.random.default_rng(22).uniform(-1, 1, (9, d)).astype(np.float32)
    want = swiglu.MoeLayer(router, *ws, threads=1, **kwargs)(x)
    for threads in (2, 3):
        layer = swiglu.MoeLayer(router, *ws, threads=threads, **kwargs)
        np.testing.assert_array_equal(layer(x), want)
        same = x.copy()
        assert layer(same, out=same) is same
        np.testing.assert_array_equal(same, want)
    # One token as a 1-D x; no tokens.
    np.testing.assert_array_equal(layer(x[4]), want[4])
    ids, weights = layer.route(x[4])
    assert ids.shape == weights.shape == (2,)
    assert layer(x[:0]).shape == (0, d)
    # in_out: the same matrices transposed, the same numbers.
    t = [np.ascontiguousarray(w.T) for w in shared]
    transposed = swiglu.MoeLayer(router.T.copy(), *(np.ascontiguousarray(w.transpose(0, 2, 1)) for w in ws),
                                 layout="in_out", threads=2, k=2, normalize=True, shared=tuple(t),
                                 shared_gate=shared_gate)
    np.testing.assert_allclose(transposed(x), want, rtol=0, atol=1e-5 * np.max(np.abs(want)))
    # layer.experts is the layer's own: on the layer's routing, plus nothing
    # shared, it is the layer without the shared block.
    plain = swiglu.MoeLayer(router, *ws, threads=2, k=2, normalize=True)
    ids, weights = plain.route(x)
    plain_y = plain(x)
    np.testing.assert_array_equal(plain.experts(x, ids, weights), plain_y)
    experts = plain.experts
    del plain  # the Experts keeps the layer's experts alive
    np.testing.assert_array_equal(experts(x, ids, weights), plain_y)
    # Concurrent callers of one layer get the serial bits.
    xs = [x[:1 + i] for i in range(6)]
    for xi, yi in zip(xs, concurrent_results(layer, xs)):
        np.testing.assert_array_equal(yi, want[:len(xi)])


def test_moe_layer_bad_input():
    E, d, f, fs = 8, 16, 12, 20
    router, ws, bias, shared, shared_gate = moe_model(E, d, f, fs, seed=31)
    for kind, message, kwargs in [
        (swiglu.Error, r"router is \(7, 16\) out_in, must map d = 16 to E = 8", dict(router=router[:7])),
        (ValueError, "router must be 2-D", dict(router=router.ravel())),
        (ValueError, "bias must hold E = 8 numbers, got 7", dict(bias=bias[:7])),
        (ValueError, "shared_gate must hold d = 16 numbers, got 15", dict(shared=tuple(shared), shared_gate=shared_gate[:15])),
        (ValueError, "shared_gate is given without a shared block", dict(shared_gate=shared_gate)),
        (TypeError, r"shared must be \(w_gate, w_up, w_down\)", dict(shared=shared[0])),
        (TypeError, r"shared must be \(w_gate, w_up, w_down\)", dict(shared=tuple(shared[:2]))),
        (swiglu.Error, "shared block's d = 8 differs from the experts' d = 16",
         dict(shared=tuple(w[0] for w in stacked(1, 8, fs)))),
        (swiglu.Error, r"top_k must be in \[1, experts = 8\] \(got 9\)", dict(k=9)),
        (ValueError, "score must be", dict(score="relu")),
        (ValueError, r"w_down must have shape \(E, d, f\)", dict(w_down=ws[2][:, :, 1:])),
        (TypeError, "k must be an integer", dict(k=2.0)),
    ]:
        args = dict(router=router, w_gate=ws[0], w_up=ws[1], w_down=ws[2], k=2)
        args.update(kwargs)
        with pytest.raises(kind, match=message):
            swiglu.MoeLayer(args.pop("router"), args.pop("w_gate"), args.pop("w_up"),
                            args.pop("w_down"), threads=1, **args)
    layer = swiglu.MoeLayer(router, *ws, k=2, threads=1)
    x = np.ones((2, d), np.float32)
    out = np.full((2, d), 7.0, np.float32)
    nan_x = x.copy()
    nan_x[1, 3] = np.nan
    for kind, message, call in [
        (TypeError, "x must be float32", lambda: layer(x.astype(np.float64), out=out)),
        (ValueError, r"x must have shape \(\.\.\., 16\)", lambda: layer(np.ones((2, 15), np.float32), out=out)),
        (ValueError, "out must have x's shape", lambda: layer(x, out=np.empty((3, d), np.float32))),
        (swiglu.Error, "token 1's router logit for expert 0 is -?nan", lambda: layer(nan_x, out=out)),
        (swiglu.Error, "token 1's router logit", lambda: layer.route(nan_x)),
        (ValueError, r"x must have shape \(\.\.\., 16\)", lambda: layer.route(np.ones(15, np.float32))),
    ]:
        with pytest.raises(kind, match=message):
            call()
        assert np.all(out == 7.0), message


def test_load_returns_the_moe_layer_of_a_checkpoint(tmp_path):
    """swiglu.load(path, layer=N) on a Mixtral-style checkpoint (safetensors
    and config.json): the whole layer, as MoeLayer built from the same arrays
    computes it; expert=E still loads one expert's block."""
    import json
    from test_swiglu import write_safetensors

    E, d, f, k = 4, 16, 24, 2
    g, u, dn = stacked(E, d, f, seed=7)
    router = np.random.default_rng(8).uniform(-1, 1, (E, d)).astype(np.float32)
    p = "model.layers.0.block_sparse_moe."
    tensors = {p + "gate.weight": router}
    for e in range(E):
        tensors.update({p + "experts.%d.w1.weight" % e: g[e], p + "experts.%d.w3.weight" % e: u[e],
                        p + "experts.%d.w2.weight" % e: dn[e]})
    write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "mixtral", "num_local_experts": E, "num_experts_per_tok": k}))
    layer = swiglu.load(tmp_path / "model.safetensors", layer=0, threads=1)
    assert isinstance(layer, swiglu.MoeLayer) and layer.k == k and layer.experts.experts == E
    direct = swiglu.MoeLayer(router, g, u, dn, k=k, normalize=True, threads=1)
    x = np.random.default_rng(9).uniform(-1, 1, (5, d)).astype(np.float32)
    np.testing.assert_array_equal(layer(x), direct(x))
    for got, want in zip(layer.route(x), direct.route(x)):
        np.testing.assert_array_equal(got, want)
    one = swiglu.load(tmp_path / "model.safetensors", layer=0, expert=2, threads=1)
    assert isinstance(one, swiglu.Ffn)
    np.testing.assert_array_equal(one(x), swiglu.Ffn(g[2], u[2], dn[2], threads=1)(x))
