"""swiglu for PyTorch models: a drop-in for their SwiGLU feed-forward modules.

    from swiglu.torch import SwiGLU, replace_mlps, restore_mlps
    fast = SwiGLU.from_module(model.layers[0].mlp)   # one module
    n = replace_mlps(model)                          # every one in a model
    restore_mlps(model)                              # and back

A module qualifies when it has three bias-free nn.Linear children named
(gate_proj, up_proj, down_proj) (Hugging Face LlamaMLP, Mistral, Qwen2, ...)
or (gate_proj, val_proj, out_proj) (the CyberSLM seed's SwiGLUFeedForward),
and, where it has an `act_fn`, that act_fn is SiLU. The replacement computes
down(SiLU(gate(x)) * up(x)) as the original does.

The replacement keeps the original's Linear children (and so its
Parameters, under the same names: state_dict, load_state_dict, deepcopy,
pickle and torch.save see the model they saw before) and runs them as one
registered operator, torch.ops.swiglu.ffn, so that torch.jit.trace and
torch.jit.script record the call. The operator packs the weights into a
swiglu block on first use and again whenever they change (an optimizer
step, load_state_dict); its autograd runs swiglu's fused backward (f32
blocks) for the input and for every weight that requires grad.
"""

import threading as _threading
import weakref as _weakref

import torch as _torch
from torch import nn as _nn

from . import Ffn as _Ffn
from . import dtypes as _dtypes

__all__ = ["SwiGLU", "replace_mlps", "restore_mlps"]

# The child names of each module family: (gate, up, down).
_SCHEMES = (("gate_proj", "up_proj", "down_proj"), ("gate_proj", "val_proj", "out_proj"))


def _threads(threads):
    """The thread count a block built with `threads` runs on: 0 (the
    default) follows torch.get_num_threads() at the time the block is built,
    so torch.set_num_threads (or OMP_NUM_THREADS) sizes torch's ops and
    swiglu's blocks alike; any other count is the block's own. A SwiGLU
    module keeps the count (the operator's `threads` argument, never 0)."""
    return int(threads) or _torch.get_num_threads()


# ---- Packed blocks, one per set of weights ------------------------------
#
# The operator gets the weight tensors themselves (the same Python objects on
# every call, eager, traced or scripted). A block is found by their identity
# and checked against their state: the version counter that every in-place
# change bumps (optimizer steps, load_state_dict's copy_), the data pointer
# (a .data swap) and the shape. The entries of a set of weights
# go when any of them dies, so an identity is never reused for other memory.

_blocks = {}  # (id(gate), id(up), id(down)) -> {(dtype, threads): (state, Ffn)}
_packing = _threading.Lock()  # taken to pack only: lookups are plain dict reads


def _state(w):
    # Inference tensors keep no version counter (they change only inside
    # inference_mode, where nothing can tell): their blocks are not repacked.
    # A new dtype or layout comes with new memory (.data = ...) or a version
    # bump (in-place ops); the strides tell a transpose of a square weight
    # swapped in. What none of them sees: a write through another tensor's
    # version counter (w.data.copy_(...), a numpy view): SwiGLU.repack().
    version = None if w.is_inference() else w._version
    return (w.data_ptr(), version, w.shape, w.stride())


def _numpy(weight):
    # float32 on the CPU, sharing memory where it already is.
    return weight.detach().to(device="cpu", dtype=_torch.float32).numpy()


def _block(w_gate, w_up, w_down, dtype, threads):
    """The swiglu block for these weights as they are now, packed in `dtype`."""
    weights = (w_gate, w_up, w_down)
    ids = (id(w_gate), id(w_up), id(w_down))
    key = (dtype, threads)
    state = tuple(_state(w) for w in weights)
    per = _blocks.get(ids)
    entry = per.get(key) if per is not None else None
    if entry is not None and entry[0] == state:
        return entry[1]
    with _packing:
        per = _blocks.get(ids)
        entry = per.get(key) if per is not None else None
        if entry is not None and entry[0] == state:
            return entry[1]
        ffn = _Ffn(*(_numpy(w) for w in weights), layout="out_in", dtype=dtype, threads=threads)
        if per is not None:
            per[key] = (state, ffn)
        else:
            # Published whole: a lookup without the lock never sees it empty.
            _blocks[ids] = {key: (state, ffn)}
            for w in weights:
                _weakref.finalize(w, _blocks.pop, ids, None)
        return ffn


def _forget(w_gate, w_up, w_down):
    """Drops every block packed for these weights (each dtype and thread count)."""
    with _packing:
        _blocks.pop((id(w_gate), id(w_up), id(w_down)), None)


# ---- The operator: swiglu::ffn ------------------------------------------
#
# Registered kernels: CPU (the block's forward), Autograd (swiglu's backward
# where anything requires grad) and AutocastCPU (bfloat16 autocast runs a
# bf16 block). The tracer records the call above the Autograd kernel, so a
# traced or scripted model runs the same kernels as an eager one.

_lib = _torch.library.Library("swiglu", "DEF")
_lib.define("ffn(Tensor x, Tensor w_gate, Tensor w_up, Tensor w_down, str dtype, int threads) "
            "-> Tensor")


def _check_input(x, w_gate):
    # What nn.Linear refuses, refused the same way (it raises for integers).
    if not x.is_floating_point():
        raise TypeError("x must be a floating-point tensor, got %s" % x.dtype)
    if x.dim() < 1 or x.shape[-1] != w_gate.shape[1]:
        raise ValueError("x must have shape (..., %d), got %s" % (w_gate.shape[1], tuple(x.shape)))


def _forward(x, w_gate, w_up, w_down, dtype, threads):
    """y = block(x), outside autograd; y has x's dtype (the block runs in float32)."""
    _check_input(x, w_gate)
    ffn = _block(w_gate, w_up, w_down, dtype, threads)
    x32 = (x.detach() if x.requires_grad else x).to(_torch.float32)
    y = ffn.forward(x32, copy=not x32.is_contiguous())
    return y if x.dtype == _torch.float32 else y.to(x.dtype)


class _Backward(_torch.autograd.Function):
    """y = block(x) with swiglu's backward: dx and the weight gradients that
    are needed. Gate and up of the forward are kept for it (2 tokens f
    floats); the weights are saved too, so that changing them in place
    before backward raises autograd's usual error."""

    @staticmethod
    def forward(ctx, x, w_gate, w_up, w_down, ffn):
        y, saved = ffn.forward_for_backward(x)
        ctx.ffn = ffn
        ctx.save_for_backward(x, w_gate, w_up, w_down, saved)
        return y

    @staticmethod
    @_torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        x, _, _, _, saved = ctx.saved_tensors
        grads = {name: _torch.empty(ctx.ffn.gradient_shape(name))
                 for name, needed in zip(("gate", "up", "down"), ctx.needs_input_grad[1:4])
                 if needed}
        dx, grads = ctx.ffn.backward(x, dy.contiguous(), saved, grads=grads)
        return ((dx if ctx.needs_input_grad[0] else None), grads.get("gate"), grads.get("up"),
                grads.get("down"), None)


def _autograd(x, w_gate, w_up, w_down, dtype, threads):
    weights = (w_gate, w_up, w_down)
    if not (_torch.is_grad_enabled() and (x.requires_grad or any(w.requires_grad for w in weights))):
        return _forward(x, w_gate, w_up, w_down, dtype, threads)
    _check_input(x, w_gate)
    ffn = _block(w_gate, w_up, w_down, dtype, threads)
    packed = ffn.implementation["dtype"]
    if packed != "f32":
        raise RuntimeError(
            "swiglu's backward needs an f32 block and this one packs %s: build it with "
            "dtype='f32' to pass gradients through it (to its input or its weights), or run "
            "under torch.no_grad()" % packed)
    x32 = x.to(_torch.float32).contiguous()  # recorded: the gradient comes back in x's dtype
    y = _Backward.apply(x32, w_gate, w_up, w_down, ffn)
    return y if x.dtype == _torch.float32 else y.to(x.dtype)


def _autocast(x, w_gate, w_up, w_down, dtype, threads):
    # As autocast treats nn.Linear: a float or half x runs in bfloat16 and the
    # result is bfloat16. An f32 block becomes a bf16 one, except where a
    # gradient is needed (swiglu's backward is f32: the block then runs in
    # f32 and only the result is bfloat16).
    with _torch.autocast("cpu", enabled=False):
        if x.dtype in (_torch.float32, _torch.float16) and \
                _torch.get_autocast_cpu_dtype() == _torch.bfloat16:
            grad = _torch.is_grad_enabled() and (
                x.requires_grad or w_gate.requires_grad or w_up.requires_grad or
                w_down.requires_grad)
            if dtype == "f32" and not grad:
                dtype = "bf16"
            x = x.to(_torch.bfloat16)
        return _torch.ops.swiglu.ffn(x, w_gate, w_up, w_down, dtype, threads)


_lib.impl("ffn", _forward, "CPU")
_lib.impl("ffn", _autograd, "Autograd")
_lib.impl("ffn", _autocast, "AutocastCPU")


def _no_onnx(g, *args):
    raise _torch.onnx.errors.OnnxExporterError(
        "swiglu::ffn has no ONNX form (its block is packed in swiglu's own formats): "
        "call swiglu.torch.restore_mlps(model) before torch.onnx.export")


for _opset in range(7, 18):
    _torch.onnx.register_custom_op_symbolic("swiglu::ffn", _no_onnx, _opset)
del _opset


# ---- The module ---------------------------------------------------------


def _scheme(module):
    """The (gate, up, down) child names `module` has as nn.Linear, or None."""
    for names in _SCHEMES:
        if all(isinstance(getattr(module, n, None), _nn.Linear) for n in names):
            return names
    return None


def _check(module, names):
    """Raises ValueError if `module` is not a SwiGLU block swiglu can run."""
    kind = type(module).__name__
    for n in names:
        if getattr(module, n).bias is not None:
            raise ValueError("%s.%s has a bias: swiglu's block has none (gate, up and down "
                             "must be bias-free Linear layers)" % (kind, n))
    act = getattr(module, "act_fn", None)
    if act is not None and not _is_silu(act):
        raise ValueError("%s.act_fn is %s, not SiLU: swiglu computes SiLU(gate) * up"
                         % (kind, type(act).__name__))
    gate, up, down = (getattr(module, n).weight for n in names)
    f, d = gate.shape
    if tuple(up.shape) != (f, d) or tuple(down.shape) != (d, f):
        raise ValueError("%s: %s %s, %s %s and %s %s do not form a block (gate and up "
                         "(f, d), down (d, f))" % (kind, names[0], tuple(gate.shape), names[1],
                                                   tuple(up.shape), names[2], tuple(down.shape)))


def _is_silu(act):
    # nn.SiLU, transformers' SiLUActivation, or any callable that computes it.
    if isinstance(act, _nn.SiLU):
        return True
    try:
        z = _torch.tensor([-4.0, -1.0, 0.0, 0.5, 3.0])
        with _torch.no_grad():
            return bool(_torch.allclose(act(z), _nn.functional.silu(z), rtol=1e-6, atol=1e-7))
    except Exception:
        return False


def _dtype_of(weights, dtype, trainable):
    """The packed dtype for these weights, checked against `trainable`."""
    if dtype is None:
        dtype = "bf16" if weights[0].dtype == _torch.bfloat16 else "f32"
    if dtype not in _dtypes:
        raise ValueError("dtype must be one of %s, got %r" % (", ".join(_dtypes), dtype))
    if trainable and dtype != "f32":
        raise ValueError("trainable=True needs dtype='f32' (swiglu's backward is f32), got %r"
                         % dtype)
    return dtype


class SwiGLU(_nn.Module):
    """A SwiGLU feed-forward block run by swiglu: y = down(SiLU(gate(x)) * up(x)).

    Build it with SwiGLU.from_module(m), or from weights stored (out, in)
    as nn.Linear keeps them: SwiGLU(w_gate (f, d), w_up (f, d), w_down (d, f))
    (copied into its own, frozen, Parameters gate_proj.weight, up_proj.weight,
    down_proj.weight). x: a CPU tensor (..., d) of any floating dtype; the
    result has x's dtype and shape (the block runs in float32 on weights
    packed in `dtype`); an integer x raises TypeError, as nn.Linear does.
    """

    _names = _SCHEMES[0]
    # Python-side state TorchScript has no use for: the module this one
    # replaced (restore_mlps) and its weights' requires_grad flags.
    __jit_ignored_attributes__ = ["_original", "_requires_grad"]
    __jit_unused_properties__ = ["ffn", "d", "f"]

    def __init__(self, w_gate, w_up, w_down, dtype="f32", threads=0):
        super().__init__()
        for name, w in zip(self._names, (w_gate, w_up, w_down)):
            w = _torch.as_tensor(w).detach().clone()
            linear = _nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=w.dtype)
            linear.weight = _nn.Parameter(w, requires_grad=False)
            setattr(self, name, linear)
        _check(self, self._names)
        self.dtype = _dtype_of([w_gate], dtype, False)
        self.threads = _threads(threads)
        self.__dict__.update(_original=None, _requires_grad=None)
        self.ffn  # packs now: a bad dtype or shape raises here, not at the first call

    @classmethod
    def from_module(cls, module, dtype=None, threads=0, trainable=None):
        """The swiglu block of `module`, a module with bias-free Linear children
        (gate_proj, up_proj, down_proj) or (gate_proj, val_proj, out_proj).
        It shares those Linear children (and their Parameters) with `module`.

        dtype: the packed weights' format (one of swiglu.dtypes, e.g. "bf16"
        or "q4_k"); None keeps the module's: "bf16" for bfloat16 weights, "f32"
        otherwise. trainable: None keeps each weight's requires_grad for an
        f32 block and clears it for other formats (swiglu's backward is
        f32); True sets it (f32 blocks only, else ValueError); False clears
        it. Raises TypeError for a module without such children, ValueError
        for biases, an act_fn other than SiLU or mismatched shapes.
        """
        block = cls._build(module, dtype, threads, trainable)
        block._train(trainable)
        return block

    @classmethod
    def _build(cls, module, dtype, threads, trainable):
        """The block of `module`, packed, its weights' flags untouched."""
        names = _scheme(module)
        if names is None:
            raise TypeError(
                "%s is not a SwiGLU block: it needs nn.Linear children (gate_proj, up_proj, "
                "down_proj) or (gate_proj, val_proj, out_proj)" % type(module).__name__)
        _check(module, names)
        linears = [getattr(module, n) for n in names]
        dtype = _dtype_of([lin.weight for lin in linears], dtype, trainable)
        kind = SwiGLU if names == SwiGLU._names else _SwiGLUValOut
        block = kind.__new__(kind)
        _nn.Module.__init__(block)
        for name, linear in zip(names, linears):
            setattr(block, name, linear)
        block.dtype = dtype
        block.threads = _threads(threads)
        # Not a child: the replaced module is kept for restore_mlps, outside
        # the module tree (its Parameters are this block's own).
        block.__dict__.update(_original=module,
                              _requires_grad=[lin.weight.requires_grad for lin in linears])
        block.ffn  # packs now, as __init__ does
        return block

    def _train(self, trainable):
        # None: as they are for f32 (the only format with a backward), else frozen.
        if trainable is None and self.dtype != "f32":
            trainable = False
        if trainable is not None:
            for w in self._weights():
                w.requires_grad_(trainable)

    def _weights(self):
        return tuple(getattr(self, n).weight for n in self._names)

    @property
    def ffn(self):
        """The swiglu.Ffn that runs the block for the weights as they are now."""
        return _block(*self._weights(), self.dtype, self.threads)

    def repack(self):
        """Packs the weights again, now. Needed only after a write the block
        cannot see: one through another tensor (w.data.copy_(...),
        w.data.normal_(), a numpy view of w); in-place ops on the weights
        themselves, load_state_dict and optimizer steps are seen."""
        _forget(*self._weights())
        self.ffn

    @property
    def d(self):
        return self._weights()[0].shape[1]

    @property
    def f(self):
        return self._weights()[0].shape[0]

    def forward(self, x):
        return _torch.ops.swiglu.ffn(x, self.gate_proj.weight, self.up_proj.weight,
                                     self.down_proj.weight, self.dtype, self.threads)

    def extra_repr(self):
        i = self.ffn.implementation
        return "d=%d, f=%d, dtype=%s, matmul=%s, threads=%d" % (
            self.d, self.f, i["dtype"], i["matmul"], i["threads"])

    def _get_name(self):
        return "SwiGLU"


class _SwiGLUValOut(SwiGLU):
    """The CyberSLM scheme's children: gate_proj, val_proj (up), out_proj (down)."""

    _names = _SCHEMES[1]

    def forward(self, x):
        return _torch.ops.swiglu.ffn(x, self.gate_proj.weight, self.val_proj.weight,
                                     self.out_proj.weight, self.dtype, self.threads)


def _walk(model, take):
    """(parent, child name, child) for every child `take` accepts, under
    `model`, descending into the others; a child shared by several parents
    is listed once per parent."""
    found = []
    seen = set()  # (id(parent), name): a shared parent is walked once

    def visit(parent):
        # _modules, not named_children(): that lists a shared child once.
        for name, child in parent._modules.items():
            if child is None or (id(parent), name) in seen:
                continue
            seen.add((id(parent), name))
            if take(child):
                found.append((parent, name, child))
            else:
                visit(child)

    visit(model)
    return found


def replace_mlps(model, dtype=None, threads=0, trainable=None):
    """Replaces every SwiGLU block inside `model` (see SwiGLU.from_module) with
    a swiglu.torch.SwiGLU, in place, and returns how many it replaced.

    The replacement keeps the block's Linear children and Parameters under
    their names. dtype, threads, trainable: as for SwiGLU.from_module (by
    default a training model stays trainable where the block is f32).
    Every candidate is checked before any is replaced: on error (a bias, an
    act_fn other than SiLU, a bad dtype) the model is left as it was. The
    model itself is never replaced (use SwiGLU.from_module for a lone
    block). A module shared by several parents becomes one SwiGLU shared
    the same way. restore_mlps(model) undoes it.
    """
    def take(child):
        if isinstance(child, SwiGLU):
            return False
        names = _scheme(child)
        if names is not None:
            _check(child, names)
            _dtype_of([getattr(child, names[0]).weight], dtype, trainable)
        return names is not None

    found = _walk(model, take)
    built = {}  # every block packed before the model changes
    for parent, name, child in found:
        if id(child) not in built:
            built[id(child)] = SwiGLU._build(child, dtype, threads, trainable)
    for block in built.values():
        block._train(trainable)
    for parent, name, child in found:
        setattr(parent, name, built[id(child)])
    return len(found)


def restore_mlps(model):
    """Puts back the modules replace_mlps replaced inside `model`, in place,
    with their current (possibly trained) weights and their requires_grad
    flags as they were before the replacement; returns how many it restored.
    A SwiGLU built from weights (no original module) stays."""
    found = _walk(model, lambda child: isinstance(child, SwiGLU))
    for parent, name, block in found:
        original = block._original
        if original is None:
            continue
        _forget(*block._weights())  # the packed copies go with the swap
        for n, flag in zip(block._names, block._requires_grad):
            linear = getattr(block, n)
            setattr(original, n, linear)
            linear.weight.requires_grad_(flag)
        setattr(parent, name, original)
    return sum(block._original is not None for _, _, block in found)

