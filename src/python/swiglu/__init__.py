"""swiglu: the SwiGLU feed-forward block of LLaMA-style transformers, on the CPU.

    y = (SiLU(x @ W_gate) * (x @ W_up)) @ W_down

Build a block from weight arrays (`Ffn`) or load one from a checkpoint
(`load`: safetensors, sharded or not, or GGUF), then call it on float32
arrays of shape (..., d). The forward runs with the GIL released, on the
caller's own buffers, and one Ffn may be called from several threads at once.
"""

import numpy as _np

from ._swiglu import Error, _Ffn, cpu_features, version

__all__ = ["Ffn", "Error", "load", "version", "cpu_features"]


class Ffn:
    """A SwiGLU block: gate and up map d -> f, down maps f -> d.

    Ffn(w_gate, w_up, w_down, layout="out_in", dtype="f32", threads=0)

    layout: "out_in" for weights stored (out, in) as torch.nn.Linear keeps
    them (gate and up (f, d), down (d, f)); "in_out" for (in, out), x @ W
    (the glassllm seed's numpy W1, W3, W2). Any numeric arrays: the library
    copies and packs them at construction.
    dtype: "f32", "bf16", "int8", "q8_0" or "q4_0" (the precision of the
    packed weights; x and y stay float32). threads: 0 = all cores.
    """

    def __init__(self, w_gate, w_up, w_down, layout="out_in", dtype="f32", threads=0, *, _impl=None):
        if _impl is not None:
            self._impl = _impl
            return
        arrays = [_np.asarray(w) for w in (w_gate, w_up, w_down)]
        for name, w in zip(("w_gate", "w_up", "w_down"), arrays):
            if w.dtype.kind not in "fiu":
                raise TypeError("%s must hold numbers, got dtype %s" % (name, w.dtype))
        self._impl = _Ffn(*arrays, layout=layout, dtype=dtype, threads=int(threads))

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
        """What runs the block: dtype, matmul kernels, activation ISA, threads."""
        return self._impl.implementation

    def info(self):
        """The implementation, as `swiglu info` prints it."""
        i = self.implementation
        return "d %d, f %d, dtype %s, matmul %s, activation %s, threads %d" % (
            self.d, self.f, i["dtype"], i["matmul"], i["activation"], i["threads"])

    def _input(self, x, copy):
        if not isinstance(x, _np.ndarray):
            x = _np.asarray(x) if copy else _as_array(x)
        if x.dtype != _np.float32:
            if not copy:
                raise TypeError("x must be float32, got %s (pass copy=True to convert)" % x.dtype)
            x = x.astype(_np.float32)
        if x.ndim < 1 or x.shape[-1] != self.d:
            raise ValueError("x must have shape (..., %d), got %s" % (self.d, x.shape))
        if not x.flags.c_contiguous:
            if not copy:
                raise ValueError("x is not C-contiguous (pass copy=True to copy it)")
            x = _np.ascontiguousarray(x)
        return x

    def forward(self, x, out=None, copy=False):
        """y = block(x) for x of shape (..., d), float32, C-contiguous.

        out: a float32, C-contiguous array of x's shape to write y into (it
        may be x itself); a new array otherwise. copy=True accepts any
        array-like, converting and copying it. Bad input raises TypeError or
        ValueError and writes nothing.
        """
        x = self._input(x, copy)
        if out is None:
            out = _np.empty(x.shape, dtype=_np.float32)
        else:
            if not isinstance(out, _np.ndarray) or out.dtype != _np.float32:
                raise TypeError("out must be a float32 numpy array")
            if out.shape != x.shape:
                raise ValueError("out must have x's shape %s, got %s" % (x.shape, out.shape))
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError("out must be C-contiguous and writeable")
        self._impl.forward_into(x, out)
        return out

    __call__ = forward

    def trace(self, x, copy=False):
        """The intermediates of block(x), as the glassllm seed's tracer keys them:
        {"ffn.gate", "ffn.up", "ffn.act"} (..., f) and {"ffn.down"} (..., d)."""
        return self._impl.trace(self._input(x, copy))


def _as_array(x):
    # Anything with the buffer protocol, without a copy.
    try:
        return _np.asarray(memoryview(x))
    except TypeError:
        raise TypeError("x must be a numpy array or support the buffer protocol, got %s"
                        % type(x).__name__) from None


def load(path, layer=None, block=None, expert=None, dtype="f32", threads=0):
    """The block a checkpoint holds (safetensors file, a sharded checkpoint's
    index or folder, or GGUF), packed straight from the file.

    layer, expert: choose among several (model.layers.N..., ...experts.E.);
    block: the block's prefix, e.g. "model.layers.3.mlp.". See the README's
    table of schemes; errors say what the file holds.
    """
    impl = _Ffn.load(str(path), -1 if layer is None else int(layer), block or "",
                     -1 if expert is None else int(expert), dtype, int(threads))
    return Ffn(None, None, None, _impl=impl)
