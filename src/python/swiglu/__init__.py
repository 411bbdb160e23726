"""swiglu: the SwiGLU feed-forward block of LLaMA-style transformers, on the CPU.

    y = (SiLU(x @ W_gate) * (x @ W_up)) @ W_down

Build a block from weight arrays (`Ffn`) or load one from a checkpoint
(`load`: safetensors, sharded or not, or GGUF), then call it on float32
arrays of shape (..., d): numpy arrays, PyTorch CPU tensors (the result is
then a tensor) or anything with the buffer protocol or DLPack. The forward
runs with the GIL released, on the caller's own buffers, and one Ffn may be
called from several threads at once. `swiglu.torch` holds the drop-in for
PyTorch modules.

Mixture of experts: `route` (a router's logits to each token's k experts
and weights), `Experts` (E blocks of one shape, run on the tokens that chose
them) and `MoeLayer` (router, experts and a shared block together).
"""

import operator as _operator
import sys as _sys

import numpy as _np

from ._swiglu import (Error, _Experts, _Ffn, _MoeLayer, _dtypes, _route, __version__,
                      cpu_features, version)

__all__ = ["Ffn", "Error", "load", "version", "cpu_features", "dtypes", "route", "Experts",
           "MoeLayer"]

#: Every dtype a block runs in, from the library's format table.
dtypes = tuple(_dtypes())


def _weights(arrays, names):
    """Weight arrays as the library copies them: any numbers, converted."""
    arrays = [_np.asarray(w) for w in arrays]
    for name, w in zip(names, arrays):
        if w.dtype.kind not in "fiu":
            raise TypeError("%s must hold numbers, got dtype %s" % (name, w.dtype))
    return arrays


class Ffn:
    """A SwiGLU block: gate and up map d -> f, down maps f -> d.

    Ffn(w_gate, w_up, w_down, layout="out_in", dtype="f32", threads=0, down_dtype=None)

    layout: "out_in" for weights stored (out, in) as torch.nn.Linear keeps
    them (gate and up (f, d), down (d, f)); "in_out" for (in, out), x @ W
    (the glassllm seed's numpy W1, W3, W2). Any numeric arrays: the library
    copies and packs them at construction.
    dtype: one of DTYPES (the format of the packed weights; x and y stay
    float32). down_dtype: down's own format where it differs (both must then
    be block formats, e.g. dtype="q4_k", down_dtype="q6_k" as in Q4_K_M
    files). threads: 0 = all cores.
    """

    def __init__(self, w_gate, w_up, w_down, layout="out_in", dtype="f32", threads=0,
                 down_dtype=None, *, _impl=None):
        if _impl is not None:
            self._impl = _impl
            return
        arrays = _weights((w_gate, w_up, w_down), ("w_gate", "w_up", "w_down"))
        self._impl = _Ffn(*arrays, layout=layout, dtype=dtype, threads=int(threads),
                          down_dtype=down_dtype)

    @property
    def d(self):
        """The model width: x and y have shape (..., d)."""
        return self._impl.d

    @property
    def f(self):
        """The hidden width."""
        return self._impl.f

    @property
    def threads(self):
        return self._impl.threads

    @property
    def implementation(self):
        """What runs the block: dtype (gate's and up's), down_dtype, matmul
        kernels, activation ISA, threads."""
        return self._impl.implementation

    def info(self):
        """The implementation, as `swiglu info` prints it."""
        i = self.implementation
        dtype = i["dtype"] if i["down_dtype"] == i["dtype"] else "%s (down %s)" % (
            i["dtype"], i["down_dtype"])
        return "d %d, f %d, dtype %s, matmul %s, activation %s, threads %d" % (
            self.d, self.f, dtype, i["matmul"], i["activation"], i["threads"])

    def _input(self, x, copy):
        """x as a float32, C-contiguous numpy array of shape (..., d), sharing
        x's memory unless copy=True had to convert it."""
        if _is_tensor(x):
            x = _tensor_input(x, copy)
        elif not isinstance(x, _np.ndarray):
            x = _np.asarray(x) if copy else _as_array(x)
        if x.dtype != _np.float32:
            if not copy:
                raise TypeError("x must be float32, got %s (pass copy=True to convert)" % x.dtype)
            x = x.astype(_np.float32)
        if x.ndim < 1 or x.shape[-1] != self.d:
            raise ValueError("x must have shape (..., %d), got %s" % (self.d, tuple(x.shape)))
        if not x.flags.c_contiguous:
            if not copy:
                raise ValueError("x is not C-contiguous (pass copy=True to copy it)")
            x = _np.ascontiguousarray(x)
        return x

    def forward(self, x, out=None, copy=False):
        """y = block(x) for x of shape (..., d), float32, C-contiguous.

        x: a numpy array, a PyTorch CPU tensor (not requiring grad: Ffn
        records no autograd history; swiglu.torch.SwiGLU does), or anything
        with the buffer protocol or DLPack;
        none is copied. The result is a tensor for a tensor, an array
        otherwise.
        out: a float32, C-contiguous array or tensor of x's shape to write y
        into (it may be x itself); a new one otherwise. copy=True accepts any
        array-like, converting and copying it. Bad input raises TypeError or
        ValueError (RuntimeError for a tensor that requires grad) and writes
        nothing.
        """
        if not copy:
            # The common call, checked by the extension alone; on any
            # failure the checks below run and say what was wrong.
            try:
                return self._forward_unchecked(x, out)
            except (TypeError, ValueError, RuntimeError, AttributeError):
                pass
        tensor = _is_tensor(x)
        xa = self._input(x, copy)
        if out is None:
            result, ya = self._new(xa.shape, tensor)
        else:
            result = out
            ya = _tensor_output(out) if _is_tensor(out) else out
            if not isinstance(ya, _np.ndarray) or ya.dtype != _np.float32:
                raise TypeError("out must be a float32 numpy array or CPU tensor")
            if ya.shape != xa.shape:
                raise ValueError("out must have x's shape %s, got %s" % (tuple(xa.shape), tuple(ya.shape)))
            if not ya.flags.c_contiguous or not ya.flags.writeable:
                raise ValueError("out must be C-contiguous and writeable")
        self._impl.forward_into(xa, ya)
        return result

    __call__ = forward

    def _forward_unchecked(self, x, out):
        # A tensor's numpy() shares its memory; it raises for what numpy
        # cannot view (grad, other devices, bfloat16), and the extension
        # rejects any array that is not float32, C-contiguous, writeable
        # (out) and of the right shape, before touching `out`.
        tensor = _is_tensor(x)
        xa = x.numpy() if tensor else x
        if out is None:
            result, ya = self._new(xa.shape, tensor)
        else:
            result = out
            ya = out.numpy() if _is_tensor(out) else out
        self._impl.forward_into(xa, ya)
        return result

    # ---- the backward pass (f32 blocks) ---------------------------------

    def gradient_shape(self, weight):
        """The shape of a weight and of its gradient ("gate", "up" or "down"),
        as the weight was given: (out, in) for layout "out_in"."""
        index = ("gate", "up", "down").index(weight)
        d, f = self.d, self.f
        out_in = (f, d) if index < 2 else (d, f)
        return out_in if self._impl.layouts[index] == "out_in" else out_in[::-1]

    def forward_for_backward(self, x, copy=False):
        """(y, saved): y = block(x), and what backward() needs of this call
        (gate and up, 2 * tokens * f floats)."""
        xa = self._input(x, copy)
        tokens = xa.size // self.d
        tensor = _is_tensor(x)
        y, ya = self._new(xa.shape, tensor)
        saved, sa = self._new((2 * tokens * self.f,), tensor)
        self._impl.forward_for_backward_into(xa, ya, sa)
        return y, saved

    def backward(self, x, dy, saved=None, grads=None, accumulate=False, copy=False):
        """(dx, grads) for dy = dL/dy of block(x): dx = dL/dx, of x's shape,
        and grads = {"gate", "up", "down"}: the weight gradients, each of
        gradient_shape(name). grads=None makes all three; a dict fills the
        arrays it holds (and computes only those: {} for dx alone), adding
        to them with accumulate=True. saved: from forward_for_backward(x), or
        None to recompute. Tensors in, tensors out. Needs dtype "f32"."""
        tensor = _is_tensor(x)
        xa = self._input(x, copy)
        dya = self._input(dy, copy)
        if dya.shape != xa.shape:
            raise ValueError("dy must have x's shape %s, got %s" % (tuple(xa.shape), tuple(dya.shape)))
        if grads is None:
            grads = {name: self._new(self.gradient_shape(name), tensor)[0]
                     for name in ("gate", "up", "down")}
        arrays = {}
        for name, g in grads.items():
            if name not in ("gate", "up", "down"):
                raise ValueError("grads keys must be 'gate', 'up' or 'down', got %r" % (name,))
            ga = _tensor_output(g) if _is_tensor(g) else g
            if not isinstance(ga, _np.ndarray) or ga.dtype != _np.float32 or not ga.flags.c_contiguous:
                raise TypeError("grads[%r] must be a float32, C-contiguous array or tensor" % name)
            if ga.shape != self.gradient_shape(name):
                raise ValueError("grads[%r] must have shape %s, got %s"
                                 % (name, self.gradient_shape(name), ga.shape))
            arrays[name] = ga
        sa = None
        if saved is not None:
            sa = _tensor_output(saved) if _is_tensor(saved) else _np.asarray(saved)
            if sa.dtype != _np.float32 or sa.size != 2 * (xa.size // self.d) * self.f:
                raise ValueError("saved must be what forward_for_backward(x) returned")
            sa = _np.ascontiguousarray(sa)
        dx, dxa = self._new(xa.shape, tensor)
        self._impl.backward_into(xa, dya, dxa, arrays.get("gate"), arrays.get("up"),
                                 arrays.get("down"), bool(accumulate), sa)
        return dx, grads

    @staticmethod
    def _new(shape, tensor):
        # (result, its numpy view): a tensor for tensor callers.
        if tensor:
            torch = _sys.modules["torch"]
            t = torch.empty(tuple(shape), dtype=torch.float32)
            return t, t.numpy()
        a = _np.empty(shape, dtype=_np.float32)
        return a, a

    def trace(self, x, copy=False):
        """The intermediates of block(x), as the glassllm seed's tracer keys them:
        {"ffn.gate", "ffn.up", "ffn.act"} (..., f) and {"ffn.down"} (..., d);
        tensors for a tensor x, arrays otherwise."""
        traced = self._impl.trace(self._input(x, copy))
        if _is_tensor(x):
            from_numpy = _sys.modules["torch"].from_numpy
            traced = {k: from_numpy(v) for k, v in traced.items()}
        return traced


def _as_array(x, name="x"):
    # Anything with the buffer protocol or DLPack, without a copy.
    try:
        return _np.asarray(memoryview(x))
    except TypeError:
        pass
    if hasattr(x, "__dlpack__"):
        return _np.from_dlpack(x)
    raise TypeError("%s must be a numpy array or a CPU tensor, or support the buffer protocol "
                    "or DLPack, got %s" % (name, type(x).__name__))


def _is_tensor(x):
    # A PyTorch tensor; torch is never imported here: a tensor implies it is.
    torch = _sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _check_tensor(t, name):
    if t.device.type != "cpu":
        raise TypeError("%s must be a CPU tensor, got one on %s" % (name, t.device))
    if t.requires_grad and _sys.modules["torch"].is_grad_enabled():
        raise RuntimeError(
            "%s requires grad, and swiglu.Ffn records no autograd history: call it under "
            "torch.no_grad(), or use swiglu.torch.SwiGLU, which does" % name)


def _tensor_input(t, copy):
    # Tensor.numpy() shares the tensor's memory (it is the zero-copy view;
    # numpy's DLPack import would give the same memory read-only).
    _check_tensor(t, "x")
    if copy:
        t = t.detach().to(dtype=_sys.modules["torch"].float32).contiguous()
    elif t.dtype != _sys.modules["torch"].float32:
        raise TypeError("x must be float32, got %s (pass copy=True to convert)" % t.dtype)
    elif not t.is_contiguous():
        raise ValueError("x is not contiguous (pass copy=True to copy it)")
    return t.detach().numpy()


def _tensor_output(t):
    _check_tensor(t, "out")
    if t.requires_grad:
        raise RuntimeError("out requires grad: swiglu writes it in place, outside autograd")
    if t.dtype != _sys.modules["torch"].float32:
        raise TypeError("out must be float32, got %s" % t.dtype)
    if not t.is_contiguous():
        raise ValueError("out must be contiguous")
    return t.numpy()


# ---- Mixture of experts -------------------------------------------------
#
# The calls take numpy arrays (or anything with the buffer protocol or
# DLPack, read without a copy) and return numpy arrays. What a call reads is
# checked here, with messages that name the argument; the extension checks
# again, and the library once more. Weights given at construction are
# converted and copied, as Ffn's are.

_ROUTER_DOC = """
    k: experts per token. score: "softmax" (Mixtral, Qwen-MoE, OLMoE,
    DeepSeek-V2) or "sigmoid" (DeepSeek-V3). normalize: divide the k
    weights by their sum (Mixtral; Qwen's norm_topk_prob). groups,
    top_groups: the E experts in `groups` equal groups of consecutive ids,
    of which only the `top_groups` best may be chosen (DeepSeek's n_group,
    topk_group); group_score: a group's score, "max" (V2) or "top2_sum" (V3).
    scaling: every weight multiplied by it last (routed_scaling_factor).
    bias: E numbers (float32 for route()) added to the scores to choose
    experts, never in the weights (DeepSeek-V3's e_score_correction_bias),
    or None."""


def _float32(a, name):
    """a as a float32, C-contiguous numpy array, without a copy."""
    if not isinstance(a, _np.ndarray):
        a = _as_array(a, name)
    if a.dtype != _np.float32:
        raise TypeError("%s must be float32, got %s" % (name, a.dtype))
    if not a.flags.c_contiguous:
        raise ValueError("%s is not C-contiguous (np.ascontiguousarray copies it)" % name)
    return a


def _integer(v, name):
    try:
        return _operator.index(v)
    except TypeError:
        raise TypeError("%s must be an integer, got %s" % (name, type(v).__name__)) from None


def _output(out, shape):
    """`out` checked as what a call may write y into: x's shape."""
    if not isinstance(out, _np.ndarray) or out.dtype != _np.float32:
        raise TypeError("out must be a float32 numpy array")
    if out.shape != shape:
        raise ValueError("out must have x's shape %s, got %s" % (shape, out.shape))
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writeable")
    return out


def route(logits, k, *, score="softmax", normalize=False, groups=1, top_groups=1,
          group_score="max", scaling=1.0, bias=None):
    """(ids, weights): each token's k experts, best first (ties to the lower
    id), and their weights, for router logits of shape (..., E), float32.

    ids: int32, weights: float32, both of shape (..., k). Scores are computed
    in double and each weight rounded to float once, as the C++ route() does.

    ROUTER

    A bad rule (k outside [1, E], groups that do not divide E, ...) or a
    non-finite logit raises swiglu.Error (status "invalid_argument", the
    message naming the field or the token and expert); a bad name ValueError.
    """
    la = _float32(logits, "logits")
    if la.ndim < 1 or la.shape[-1] < 1:
        raise ValueError("logits must have shape (..., E) with E >= 1, got %s" % (la.shape,))
    ba = None
    if bias is not None:
        ba = _float32(bias, "bias")
        if ba.shape != la.shape[-1:]:
            raise ValueError("bias must have shape (E,) = %s, got %s" % (la.shape[-1:], ba.shape))
    return _route(la, ba, _integer(k, "k"), score, bool(normalize), _integer(groups, "groups"),
                  _integer(top_groups, "top_groups"), group_score, float(scaling))


class Experts:
    """E SwiGLU blocks of one shape (d, f), the routed experts of an MoE layer.

    Experts(w_gate, w_up, w_down, layout="out_in", dtype="f32", threads=0, down_dtype=None)

    The three weights stacked, one expert after another: layout "out_in"
    (PyTorch's stacked experts) gate, up (E, f, d) and down (E, d, f);
    "in_out" gate, up (E, d, f) and down (E, f, d). Any numeric arrays:
    they are converted and copied. dtype, down_dtype, threads: as for Ffn
    (one of DTYPES), every expert packed alike.

    experts(x, ids, weights, out=None): y[t] = sum over j of
    weights[t, j] * expert_{ids[t, j]}(x[t]), as route() gives them.
    """

    def __init__(self, w_gate, w_up, w_down, layout="out_in", dtype="f32", threads=0,
                 down_dtype=None, *, _impl=None):
        if _impl is not None:
            self._impl = _impl
            return
        arrays = _weights((w_gate, w_up, w_down), ("w_gate", "w_up", "w_down"))
        self._impl = _Experts(*arrays, layout=layout, dtype=dtype, threads=int(threads),
                              down_dtype=down_dtype)

    @property
    def experts(self):
        """E, the number of experts."""
        return self._impl.experts

    @property
    def d(self):
        """The model width: x and y have shape (..., d)."""
        return self._impl.d

    @property
    def f(self):
        """Each expert's hidden width."""
        return self._impl.f

    @property
    def threads(self):
        return self._impl.threads

    @property
    def implementation(self):
        """What runs each expert, as Ffn.implementation says."""
        return self._impl.implementation

    def forward(self, x, ids, weights, out=None):
        """y = sum over j < k of weights[..., j] * expert_{ids[..., j]}(x).

        x: float32 (..., d), C-contiguous; ids: int32 or int64 (int64 is
        narrowed, each id checked), and weights: float32, both of shape
        x.shape[:-1] + (k,), C-contiguous. None is copied. out: a float32,
        C-contiguous array of x's shape to write y into (it may be x
        itself); a new one otherwise. y is bit-identical for any thread
        count. Bad dtypes raise TypeError, bad shapes ValueError; an id
        outside [0, E) or a non-finite weight swiglu.Error
        ("invalid_argument"). A refused call writes nothing.
        """
        xa = _float32(x, "x")
        if xa.ndim < 1 or xa.shape[-1] != self.d:
            raise ValueError("x must have shape (..., %d), got %s" % (self.d, xa.shape))
        ia = ids if isinstance(ids, _np.ndarray) else _as_array(ids, "ids")
        if ia.dtype != _np.int32 and ia.dtype != _np.int64:
            raise TypeError("ids must be int32 or int64, got %s" % ia.dtype)
        if ia.ndim != xa.ndim or ia.shape[:-1] != xa.shape[:-1]:
            raise ValueError("ids must have shape x.shape[:-1] + (k,) = %s, got %s"
                             % (xa.shape[:-1] + ("k",), ia.shape))
        if not ia.flags.c_contiguous:
            raise ValueError("ids is not C-contiguous (np.ascontiguousarray copies it)")
        wa = _float32(weights, "weights")
        if wa.shape != ia.shape:
            raise ValueError("weights must have ids' shape %s, got %s" % (ia.shape, wa.shape))
        ya = _np.empty(xa.shape, _np.float32) if out is None else _output(out, xa.shape)
        self._impl.forward_into(xa, ia, wa, ya)
        return ya

    __call__ = forward


class MoeLayer:
    """A whole mixture-of-experts layer: router, routed experts and, where
    the model has them, a shared block every token runs through:

        y = experts(x, route(x @ router^T)) + g(x) * shared(x)

    with g(x) = sigmoid(x . shared_gate) where a shared gate is given
    (Qwen2-MoE's shared_expert_gate), else 1 (DeepSeek's shared experts).

    MoeLayer(router, w_gate, w_up, w_down, *, k, score="softmax",
             normalize=False, groups=1, top_groups=1, group_score="max",
             scaling=1.0, bias=None, shared=None, shared_gate=None,
             layout="out_in", dtype="f32", threads=0, down_dtype=None)

    router: (E, d) for layout "out_in" (Hugging Face's gate.weight), (d, E)
    for "in_out". w_gate, w_up, w_down: the experts stacked as Experts
    takes them, in the same layout. shared: (w_gate, w_up, w_down) of the
    shared block (one Ffn of any hidden width, in the same layout), or None;
    shared_gate: d numbers, or None. Every array is converted and copied;
    the experts and the shared block are packed in dtype / down_dtype and
    run on `threads`. The layer builds its own experts from the arrays (the
    library's layer owns them; an Experts object is not taken over):
    `layer.experts` is that Experts, no copy.

    ROUTER
    """

    def __init__(self, router, w_gate, w_up, w_down, *, k, score="softmax", normalize=False,
                 groups=1, top_groups=1, group_score="max", scaling=1.0, bias=None, shared=None,
                 shared_gate=None, layout="out_in", dtype="f32", threads=0, down_dtype=None):
        arrays = _weights((router, w_gate, w_up, w_down), ("router", "w_gate", "w_up", "w_down"))
        if shared is not None:
            if not isinstance(shared, (tuple, list)) or len(shared) != 3:
                raise TypeError("shared must be (w_gate, w_up, w_down) of the shared block, "
                                "or None")
            shared = tuple(_weights(shared, ("shared w_gate", "shared w_up", "shared w_down")))
        elif shared_gate is not None:
            raise ValueError("shared_gate is given without a shared block")
        bias, shared_gate = (None if a is None else _weights((a,), (name,))[0].ravel()
                             for a, name in ((bias, "bias"), (shared_gate, "shared_gate")))
        self._impl = _MoeLayer(*arrays, layout=layout, dtype=dtype, threads=int(threads),
                               down_dtype=down_dtype, k=_integer(k, "k"), score=score,
                               normalize=bool(normalize), groups=_integer(groups, "groups"),
                               top_groups=_integer(top_groups, "top_groups"),
                               group_score=group_score, scaling=float(scaling), bias=bias,
                               shared=shared, shared_gate=shared_gate)
        self._experts = Experts(None, None, None, _impl=self._impl.experts)

    @classmethod
    def _wrap(cls, impl):
        """A MoeLayer around the library's (swiglu.load's)."""
        layer = cls.__new__(cls)
        layer._impl = impl
        layer._experts = Experts(None, None, None, _impl=impl.experts)
        return layer

    @property
    def d(self):
        """The model width: x and y have shape (..., d)."""
        return self._impl.d

    @property
    def k(self):
        """Experts per token."""
        return self._impl.k

    @property
    def experts(self):
        """The layer's routed experts, as an Experts (the layer's own, not a copy)."""
        return self._experts

    @property
    def has_shared(self):
        return self._impl.has_shared

    def _input(self, x):
        xa = _float32(x, "x")
        if xa.ndim < 1 or xa.shape[-1] != self.d:
            raise ValueError("x must have shape (..., %d), got %s" % (self.d, xa.shape))
        return xa

    def route(self, x):
        """(ids int32, weights float32), each of shape x.shape[:-1] + (k,):
        what the router chooses for x (float32 (..., d), C-contiguous), the
        same bits on every CPU and thread count."""
        return self._impl.route(self._input(x))

    def forward(self, x, out=None):
        """y = layer(x) for x float32 (..., d), C-contiguous (not copied);
        out: as for Experts (it may be x). y is bit-identical for any thread
        count. A non-finite router logit raises swiglu.Error naming the
        token and expert; a refused call writes nothing."""
        xa = self._input(x)
        ya = _np.empty(xa.shape, _np.float32) if out is None else _output(out, xa.shape)
        self._impl.forward_into(xa, ya)
        return ya

    __call__ = forward


def load(path, layer=None, block=None, expert=None, dtype="f32", threads=0, down_dtype=None):
    """The block a checkpoint holds (safetensors file, a sharded checkpoint's
    index or folder, or GGUF), packed straight from the file; for a layer
    with experts (and no block or expert chosen), the whole layer as a
    MoeLayer (router, experts, shared block; the rule from config.json or
    the GGUF metadata, docs/moe.md).

    layer, expert: choose among several (model.layers.N..., ...experts.E.);
    block: the block's prefix, e.g. "model.layers.3.mlp." (or the module's
    name, without the '.'). See docs/checkpoints.md's table of schemes;
    errors say what the file holds.
    dtype: "stored" (each weight in the format the file stores it where a
    block runs that format, packed from its blocks unchanged: a Q4_K_M
    file's Q4_K gate/up and Q6_K down; f32, or down_dtype for down, for the
    others) or one of DTYPES, which the weights are converted to (from
    safetensors too: dtype="q4_k" quantises f32 weights). down_dtype: down's
    own format, as for Ffn.
    """
    if layer is not None and block is None and expert is None and \
            _MoeLayer.is_moe_layer(str(path), int(layer)):
        return MoeLayer._wrap(_MoeLayer.load(str(path), int(layer), dtype, int(threads),
                                             down_dtype=down_dtype))
    impl = _Ffn.load(str(path), -1 if layer is None else int(layer), block or "",
                     -1 if expert is None else int(expert), dtype, int(threads),
                     down_dtype=down_dtype)
    return Ffn(None, None, None, _impl=impl)


# The dtype names in the docstrings come from the library's table; the
# router's arguments are documented once.
for _documented in (Ffn, load, Experts, MoeLayer, route):
    if _documented.__doc__:  # None under python -OO
        _documented.__doc__ = (_documented.__doc__.replace("DTYPES", ", ".join(dtypes))
                               .replace("    ROUTER\n", _ROUTER_DOC.lstrip("\n") + "\n"))
del _documented
