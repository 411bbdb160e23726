"""swiglu: the SwiGLU feed-forward block of LLaMA-style transformers, on the CPU.

    y = (SiLU(x @ W_gate) * (x @ W_up)) @ W_down

Build a block from weight arrays (`Ffn`) or load one from a checkpoint
(`load`: safetensors, sharded or not, or GGUF), then call it on float32
arrays of shape (..., d): numpy arrays, PyTorch CPU tensors (the result is
then a tensor) or anything with the buffer protocol or DLPack. The forward
runs with the GIL released, on the caller's own buffers, and one Ffn may be
called from several threads at once. `swiglu.torch` holds the drop-in for
PyTorch modules.
"""

import sys as _sys

import numpy as _np

from ._swiglu import Error, _Ffn, _dtypes, cpu_features, version

__all__ = ["Ffn", "Error", "load", "version", "cpu_features", "dtypes"]

#: Every dtype a block runs in, from the library's format table.
dtypes = tuple(_dtypes())


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
        arrays = [_np.asarray(w) for w in (w_gate, w_up, w_down)]
        for name, w in zip(("w_gate", "w_up", "w_down"), arrays):
            if w.dtype.kind not in "fiu":
                raise TypeError("%s must hold numbers, got dtype %s" % (name, w.dtype))
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


def _as_array(x):
    # Anything with the buffer protocol or DLPack, without a copy.
    try:
        return _np.asarray(memoryview(x))
    except TypeError:
        pass
    if hasattr(x, "__dlpack__"):
        return _np.from_dlpack(x)
    raise TypeError("x must be a numpy array or a CPU tensor, or support the buffer protocol "
                    "or DLPack, got %s" % type(x).__name__)


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


def load(path, layer=None, block=None, expert=None, dtype="f32", threads=0, down_dtype=None):
    """The block a checkpoint holds (safetensors file, a sharded checkpoint's
    index or folder, or GGUF), packed straight from the file.

    layer, expert: choose among several (model.layers.N..., ...experts.E.);
    block: the block's prefix, e.g. "model.layers.3.mlp.". See docs/checkpoints.md's
    table of schemes; errors say what the file holds.
    dtype: "stored" (each weight in the format the file stores it where a
    block runs that format, packed from its blocks unchanged: a Q4_K_M
    file's Q4_K gate/up and Q6_K down; f32, or down_dtype for down, for the
    others) or one of DTYPES, which the weights are converted to (from
    safetensors too: dtype="q4_k" quantises f32 weights). down_dtype: down's
    own format, as for Ffn.
    """
    impl = _Ffn.load(str(path), -1 if layer is None else int(layer), block or "",
                     -1 if expert is None else int(expert), dtype, int(threads),
                     down_dtype=down_dtype)
    return Ffn(None, None, None, _impl=impl)


# The dtype names in the docstrings come from the library's table.
for _documented in (Ffn, load):
    if _documented.__doc__:  # None under python -OO
        _documented.__doc__ = _documented.__doc__.replace("DTYPES", ", ".join(dtypes))
del _documented
