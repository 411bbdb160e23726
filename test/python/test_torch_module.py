"""swiglu.torch blocks as real PyTorch modules (issue 44): traced, scripted,
saved, loaded, copied and trained, against the same model in plain
PyTorch. Needs Debian's python3-torch.

Tolerances: outputs of one block, 1e-6 of max |y| (test_torch.py's seed
bound); losses of a small model trained 20 steps, 1e-5 relative (each
step's f32 products summed in another order than torch's; measured 1e-7)."""

import copy
import gc
import io
import pickle
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import swiglu.torch as st
from reference import relative_error
from swiglu.torch import SwiGLU, replace_mlps, restore_mlps
from test_torch import LlamaMLP, SwiGLUFeedForward

SEED_TOLERANCE = 1e-6
LOSS_TOLERANCE = 1e-5


class Block(nn.Module):
    """A residual layer around a LlamaMLP, so that the MLP is a grandchild."""

    def __init__(self, d, f):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mlp = LlamaMLP(d, f)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Tiny(nn.Module):
    """Embedding, two LlamaMLP layers and a CyberSLM-style block, a head."""

    def __init__(self, vocab=11, d=16, f=40):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([Block(d, f), Block(d, f)])
        self.ffn = SwiGLUFeedForward(d, f)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(x + self.ffn(x))


def tiny(seed=0):
    torch.manual_seed(seed)
    return Tiny()


def tokens(seed=1, shape=(4, 6)):
    return torch.randint(0, 11, shape, generator=torch.Generator().manual_seed(seed))


def swapped(seed=0):
    model = tiny(seed)
    assert replace_mlps(model, threads=1) == 3
    return model


def error(got, want):
    return relative_error(got.detach().numpy(), want.detach().numpy().astype(np.float64))


def test_public_names_are_the_api():
    assert sorted(n for n in dir(st) if not n.startswith("_")) == [
        "SwiGLU", "replace_mlps", "restore_mlps"]


def test_trace_and_script_record_the_block():
    model, x = swapped(), tokens()
    want = tiny()(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch.jit.TracerWarning)
        traced = torch.jit.trace(model, x)
    scripted = torch.jit.script(model)
    for compiled in (traced, scripted):
        assert "swiglu::ffn" in str(compiled.inlined_graph)
        # Other inputs than the traced one: the call is recorded, not its result.
        for xs in (x, tokens(2), tokens(3, (2, 9))):
            assert error(compiled(xs), tiny()(xs)) <= SEED_TOLERANCE
    assert error(model(x), want) <= SEED_TOLERANCE


def test_onnx_export_says_it_cannot():
    model = swapped()
    with pytest.raises(torch.onnx.errors.OnnxExporterError, match="restore_mlps"):
        torch.onnx.export(model, tokens(), io.BytesIO())
    restore_mlps(model)
    torch.onnx.export(model, tokens(), io.BytesIO())  # the restored model exports


def test_state_dict_and_parameters_match_the_original():
    plain, model = tiny(), swapped()
    assert list(model.state_dict()) == list(plain.state_dict())
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in plain.named_parameters()]
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in plain.parameters())
    # A strict load of another model's weights repacks the blocks.
    other = tiny(seed=5)
    model.load_state_dict(other.state_dict(), strict=True)
    x = tokens()
    assert error(model(x), other(x)) <= SEED_TOLERANCE
    plain.load_state_dict(model.state_dict(), strict=True)
    assert error(plain(x), other(x)) == 0


def test_copies_pickles_and_saves_round_trip():
    model, x = swapped(), tokens()
    with torch.no_grad():
        want = model(x)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model)), torch.load(buffer)):
        assert isinstance(twin.layers[0].mlp, SwiGLU) and isinstance(twin.ffn, SwiGLU)
        assert twin.layers[0].mlp.gate_proj.weight is not model.layers[0].mlp.gate_proj.weight
        with torch.no_grad():
            assert torch.equal(twin(x), want)
        # The copy's weights are its own: changing them leaves the model's.
        with torch.no_grad():
            twin.layers[1].mlp.down_proj.weight.zero_()
            assert not torch.equal(twin(x), want) and torch.equal(model(x), want)


def test_in_place_changes_and_new_tensors_repack():
    torch.manual_seed(2)
    seed = LlamaMLP(16, 40)
    fast = SwiGLU.from_module(seed, threads=1)
    x = torch.rand(3, 16) * 2 - 1
    with torch.no_grad():
        first = fast.ffn
        assert fast.ffn is first  # no repack while nothing changes
        seed.up_proj.weight.mul_(-2)  # in place: the version counter moves
        assert error(fast(x), seed(x)) <= SEED_TOLERANCE and fast.ffn is not first
        seed.gate_proj.weight.data = torch.rand(40, 16)  # a new tensor under the same Parameter
        assert error(fast(x), seed(x)) <= SEED_TOLERANCE
        # A write through .data has its own version counter: not seen until repack().
        seed.down_proj.weight.data.mul_(3)
        stale = fast.ffn
        fast.repack()
        assert fast.ffn is not stale and error(fast(x), seed(x)) <= SEED_TOLERANCE
    # A square block's weight swapped for its transpose (same memory, same
    # shape): the strides tell.
    square = LlamaMLP(16, 16)
    block = SwiGLU.from_module(square, threads=1)
    with torch.no_grad():
        block(x)
        square.gate_proj.weight.data = square.gate_proj.weight.data.t()
        assert error(block(x), square(x)) <= SEED_TOLERANCE


def packed_model():
    """A swapped model that has run once (three packed blocks cached), and
    the cache's size before it."""
    gc.collect()
    before = len(st._blocks)
    model = swapped()
    with torch.no_grad():
        model(tokens())
    assert len(st._blocks) == before + 3
    return model, before


def test_restore_drops_the_packed_blocks():
    model, before = packed_model()
    st.restore_mlps(model)
    assert len(st._blocks) == before


def test_blocks_go_with_their_weights():
    model, before = packed_model()
    del model
    gc.collect()
    assert len(st._blocks) == before


def test_trainable_choices_and_restore():
    model = tiny()
    model.layers[1].mlp.requires_grad_(False)  # frozen by its owner
    original = [(n, p.requires_grad) for n, p in model.named_parameters()]
    mlps = [model.layers[0].mlp, model.layers[1].mlp, model.ffn]
    assert replace_mlps(model, threads=1) == 3  # trainable=None: the flags stay
    assert [(n, p.requires_grad) for n, p in model.named_parameters()] == original
    assert restore_mlps(model) == 3
    assert [model.layers[0].mlp, model.layers[1].mlp, model.ffn] == mlps
    assert [(n, p.requires_grad) for n, p in model.named_parameters()] == original

    replace_mlps(model, threads=1, trainable=False)
    assert not any(p.requires_grad for m in (model.layers[0].mlp, model.ffn)
                   for p in m.parameters())
    restore_mlps(model)
    assert [(n, p.requires_grad) for n, p in model.named_parameters()] == original

    replace_mlps(model, threads=1, trainable=True)
    assert all(p.requires_grad for m in (model.layers[1].mlp,) for p in m.parameters())
    restore_mlps(model)
    assert [(n, p.requires_grad) for n, p in model.named_parameters()] == original

    # Another format cannot train: True is refused (nothing replaced), None freezes.
    with pytest.raises(ValueError, match="trainable=True needs dtype='f32'"):
        replace_mlps(model, dtype="q4_0", trainable=True)
    with pytest.raises(ValueError, match="dtype must be one of"):
        replace_mlps(model, dtype="f33")
    assert model.layers[0].mlp is mlps[0]
    replace_mlps(model, dtype="q4_0", threads=1)
    assert not any(p.requires_grad for m in (model.layers[0].mlp, model.ffn)
                   for p in m.parameters())
    x = tokens()
    with torch.no_grad():
        model(x)
    # A gradient through it (its input's or a weight's) is a clear error.
    model.ffn.gate_proj.weight.requires_grad_(True)
    with pytest.raises(RuntimeError, match="needs an f32 block and this one packs q4_0"):
        model(x)
    restore_mlps(model)
    assert [(n, p.requires_grad) for n, p in model.named_parameters()] == original


def test_integer_input_raises_and_autocast_runs_bf16():
    torch.manual_seed(4)
    seed = LlamaMLP(64, 160)
    fast = SwiGLU.from_module(seed, threads=1)
    with pytest.raises(TypeError, match="floating-point"):
        fast(torch.ones(2, 64, dtype=torch.int64))
    # (from a copy: a bf16 block freezes the weights it shares)
    bf16 = SwiGLU.from_module(copy.deepcopy(seed), dtype="bf16", threads=1)
    if bf16.ffn.implementation["dtype"] != "bf16":
        pytest.skip("no bf16 mode here")
    x = torch.rand(3, 64) * 2 - 1
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            want = seed(x)
            got = fast(x)
        assert got.dtype == want.dtype == torch.bfloat16
        assert torch.equal(got, bf16(x.to(torch.bfloat16)))  # the bf16 block ran
    # With a gradient to compute the block stays f32 (the backward's), the
    # result bfloat16 as autocast gives it.
    x.requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = fast(x)
    assert y.dtype == torch.bfloat16
    y.float().sum().backward()
    assert x.grad is not None and seed.gate_proj.weight.grad is not None


def train(model, steps=20):
    """Losses of `steps` Adam steps on a fixed batch (next-token cross entropy)."""
    x, target = tokens(7, (4, 6)), tokens(8, (4, 6))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 11), target.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def test_every_form_of_a_swapped_model_trains_as_plain_pytorch():
    want = train(tiny())
    assert want[-1] < 0.8 * want[0]  # it learns

    def saved(module, save, load):
        buffer = io.BytesIO()
        save(module, buffer)
        buffer.seek(0)
        return load(buffer)

    forms = {
        "eager": lambda m: m,
        "traced": lambda m: torch.jit.trace(m, tokens()),
        "scripted": torch.jit.script,
        "deepcopy": copy.deepcopy,
        "torch.save": lambda m: saved(m, torch.save, torch.load),
        "jit.save scripted": lambda m: saved(torch.jit.script(m), torch.jit.save, torch.jit.load),
        "jit.save traced": lambda m: saved(torch.jit.trace(m, tokens()), torch.jit.save,
                                           torch.jit.load),
    }
    for name, form in forms.items():
        model = form(swapped())
        gc.collect()
        blocks = len(st._blocks)
        got = train(model)
        assert np.max(np.abs(got - want) / np.abs(want)) <= LOSS_TOLERANCE, name
        assert len(st._blocks) <= blocks + 3, name  # repacked in place, one entry per block


def test_weights_made_in_inference_mode():
    with torch.inference_mode():  # inference tensors keep no version counter
        torch.manual_seed(6)
        seed = LlamaMLP(8, 16)
        fast = SwiGLU.from_module(seed, threads=1)
        x = torch.rand(2, 8) * 2 - 1
        assert error(fast(x), seed(x)) <= SEED_TOLERANCE
    with torch.no_grad():
        assert error(fast(x), seed(x)) <= SEED_TOLERANCE
