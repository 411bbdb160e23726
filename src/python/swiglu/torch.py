"""swiglu for PyTorch models: a drop-in for their SwiGLU feed-forward modules.

    from swiglu.torch import SwiGLU, replace_mlps
    fast = SwiGLU.from_module(model.layers[0].mlp)   # one module
    n = replace_mlps(model)                          # every one in a model

A module qualifies when it has three bias-free nn.Linear children named
(gate_proj, up_proj, down_proj) (Hugging Face LlamaMLP, Mistral, Qwen2, ...)
or (gate_proj, val_proj, out_proj) (the CyberSLM seed's SwiGLUFeedForward),
and, where it has an `act_fn`, that act_fn is SiLU. The replacement computes
down(SiLU(gate(x)) * up(x)) as the original does. Its weights are packed
inside swiglu and frozen (it holds no parameters): gradients flow through it
to its input (swiglu's fused backward, f32 blocks), for training what sits
around frozen blocks (adapters, other layers), not the blocks' own weights.
"""

import torch
from torch import nn

from . import Ffn

__all__ = ["SwiGLU", "replace_mlps"]

# The child names of each module family: (gate, up, down).
_SCHEMES = (("gate_proj", "up_proj", "down_proj"), ("gate_proj", "val_proj", "out_proj"))


def _scheme(module):
    """The (gate, up, down) child names `module` has as nn.Linear, or None."""
    for names in _SCHEMES:
        if all(isinstance(getattr(module, n, None), nn.Linear) for n in names):
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
    if isinstance(act, nn.SiLU):
        return True
    try:
        z = torch.tensor([-4.0, -1.0, 0.0, 0.5, 3.0])
        with torch.no_grad():
            return bool(torch.allclose(act(z), nn.functional.silu(z), rtol=1e-6, atol=1e-7))
    except Exception:
        return False


def _threads(threads):
    """The thread count a block built with `threads` runs on: 0 (the
    default) follows torch.get_num_threads() at the time the block is built,
    so torch.set_num_threads (or OMP_NUM_THREADS) sizes torch's ops and
    swiglu's blocks alike; any other count is the block's own."""
    return int(threads) or torch.get_num_threads()


class _Block(torch.autograd.Function):
    """y = block(x) with dx = dL/dx from swiglu's backward; gate and up of
    the forward are kept for it (2 * tokens * f floats)."""

    @staticmethod
    def forward(ctx, x, ffn):
        y, saved = ffn.forward_for_backward(x.detach())
        ctx.ffn = ffn
        ctx.save_for_backward(x, saved)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        x, saved = ctx.saved_tensors
        dx, _ = ctx.ffn.backward(x.detach(), dy.contiguous(), saved, grads={})
        return dx, None


def _numpy(weight):
    # float32 on the CPU, sharing memory where it already is.
    return weight.detach().to(device="cpu", dtype=torch.float32).numpy()


class SwiGLU(nn.Module):
    """A SwiGLU feed-forward block run by swiglu: y = down(SiLU(gate(x)) * up(x)).

    Build it with SwiGLU.from_module(m), or from weights stored (out, in)
    as nn.Linear keeps them: SwiGLU(w_gate (f, d), w_up (f, d), w_down (d, f)).
    x: a CPU tensor (..., d) of any floating dtype; the result has x's dtype
    and shape (the block runs in float32 on weights of `dtype`).
    """

    def __init__(self, w_gate, w_up, w_down, dtype="f32", threads=0):
        super().__init__()
        self.ffn = Ffn(_numpy(w_gate), _numpy(w_up), _numpy(w_down), layout="out_in",
                       dtype=dtype, threads=_threads(threads))

    @classmethod
    def from_module(cls, module, dtype=None, threads=0):
        """The swiglu block of `module`, a module with bias-free Linear children
        (gate_proj, up_proj, down_proj) or (gate_proj, val_proj, out_proj).

        dtype: the packed weights' format (one of swiglu.dtypes, e.g. "bf16"
        or "q4_k"); None keeps the module's: "bf16" for bfloat16 weights, "f32"
        otherwise. Raises TypeError for a module without such children,
        ValueError for biases, an act_fn other than SiLU or mismatched shapes.
        """
        names = _scheme(module)
        if names is None:
            raise TypeError(
                "%s is not a SwiGLU block: it needs nn.Linear children (gate_proj, up_proj, "
                "down_proj) or (gate_proj, val_proj, out_proj)" % type(module).__name__)
        _check(module, names)
        weights = [getattr(module, n).weight for n in names]
        if dtype is None:
            dtype = "bf16" if weights[0].dtype == torch.bfloat16 else "f32"
        return cls(*weights, dtype=dtype, threads=threads)

    @property
    def d(self):
        return self.ffn.d

    @property
    def f(self):
        return self.ffn.f

    def forward(self, x):
        if x.requires_grad and torch.is_grad_enabled():
            dtype = self.ffn.implementation["dtype"]
            if dtype != "f32":
                raise RuntimeError(
                    "swiglu's backward needs an f32 block and this one packs %s: build it with "
                    "dtype='f32' to train through it, or run under torch.no_grad()" % dtype)
            y = _Block.apply(x.to(torch.float32).contiguous(), self.ffn)
            return y if x.dtype == torch.float32 else y.to(x.dtype)
        if x.dtype == torch.float32:
            return self.ffn.forward(x, copy=not x.is_contiguous())
        # Other dtypes (bfloat16 models, ...): the block runs in float32.
        return self.ffn.forward(x, copy=True).to(x.dtype)

    def extra_repr(self):
        i = self.ffn.implementation
        return "d=%d, f=%d, dtype=%s, matmul=%s, threads=%d" % (
            self.d, self.f, i["dtype"], i["matmul"], i["threads"])


def replace_mlps(model, dtype=None, threads=0):
    """Replaces every SwiGLU block inside `model` (see SwiGLU.from_module) with
    a swiglu.torch.SwiGLU, in place, and returns how many it replaced.

    Every candidate is checked before any is replaced: on error (a bias, an
    act_fn other than SiLU) the model is left as it was. The model itself is
    never replaced (use SwiGLU.from_module for a lone block). A module shared
    by several parents becomes one SwiGLU shared the same way.
    """
    found = []  # (parent, child name, module)
    seen = set()  # (id(parent), name): a shared parent is walked once

    def visit(parent):
        # _modules, not named_children(): that lists a shared child once.
        for name, child in parent._modules.items():
            if child is None or isinstance(child, SwiGLU) or (id(parent), name) in seen:
                continue
            seen.add((id(parent), name))
            names = _scheme(child)
            if names is None:
                visit(child)
            else:
                _check(child, names)
                found.append((parent, name, child))

    visit(model)
    built = {}
    for parent, name, child in found:
        if id(child) not in built:
            built[id(child)] = SwiGLU.from_module(child, dtype=dtype, threads=threads)
    for parent, name, child in found:
        setattr(parent, name, built[id(child)])
    return len(found)
