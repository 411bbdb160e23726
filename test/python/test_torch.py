"""PyTorch: tensors through swiglu.Ffn, and swiglu.torch as a drop-in for the
seed modules (a CyberSLM-style SwiGLUFeedForward, a Hugging Face LlamaMLP)
and for every block of a small model (replace_mlps). Needs Debian's
python3-torch (the README's test command installs it).

Tolerances, relative to max |y|: against the seed module, 1e-6 (issue 15's
bound), taken against the module run in float64, its exact function. Its
own f32 output is the same f32 products summed in another order, and so
within 1e-6 plus its own error: at d = 384, f = 1024 that error was 9.8e-7
on an AVX-512 machine (ours 5.9e-7), so the two f32 outputs differ by up to
1.2e-6 there (6.1e-7 on an AVX2 one). Against the float64 reference, the
f32 bound of the other suites."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import swiglu
from reference import concurrent_results, random_block, reference, relative_error, tolerance
from swiglu.torch import SwiGLU, replace_mlps

SEED_TOLERANCE = 1e-6


class SwiGLUFeedForward(nn.Module):
    """The CyberSLM seed's block: gate_proj, val_proj (up), out_proj (down)."""

    def __init__(self, d, f):
        super().__init__()
        self.gate_proj = nn.Linear(d, f, bias=False)
        self.val_proj = nn.Linear(d, f, bias=False)
        self.out_proj = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.out_proj(F.silu(self.gate_proj(x)) * self.val_proj(x))


class LlamaMLP(nn.Module):
    """Hugging Face's LlamaMLP, as transformers writes it."""

    def __init__(self, d, f, bias=False, act=None):
        super().__init__()
        self.gate_proj = nn.Linear(d, f, bias=bias)
        self.up_proj = nn.Linear(d, f, bias=bias)
        self.down_proj = nn.Linear(f, d, bias=bias)
        self.act_fn = act if act is not None else nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    """A decoder layer's shape without attention: norm, mixing, norm, MLP."""

    def __init__(self, d, f):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.mix = nn.Linear(d, d, bias=False)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = LlamaMLP(d, f)

    def forward(self, x):
        x = x + self.mix(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Stack(nn.Module):
    def __init__(self, d, f, layers):
        super().__init__()
        self.layers = nn.ModuleList(Layer(d, f) for _ in range(layers))
        self.head = SwiGLUFeedForward(d, f)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def weights(module, names):
    return [getattr(module, n).weight.detach().numpy() for n in names]


@pytest.mark.parametrize("d,f", [(1, 1), (7, 13), (33, 61), (128, 341), (384, 1024)])
@pytest.mark.parametrize("lead", [(), (5,), (2, 3)])
@pytest.mark.parametrize("seed_module", [SwiGLUFeedForward, LlamaMLP])
def test_from_module_matches_the_seed(d, f, lead, seed_module):
    torch.manual_seed(d * 1000 + f)
    seed = seed_module(d, f)
    fast = SwiGLU.from_module(seed, threads=2)
    assert (fast.d, fast.f) == (d, f) and fast.ffn.implementation["dtype"] == "f32"
    x = torch.rand(lead + (d,)) * 2 - 1
    with torch.no_grad():
        want = seed(x).numpy().astype(np.float64)
        exact = copy.deepcopy(seed).double()(x.double()).numpy()
    got = fast(x)  # the weights require grad, as the seed's do: so does y
    assert isinstance(got, torch.Tensor) and got.shape == x.shape and got.dtype == torch.float32
    assert got.requires_grad
    got = got.detach()
    assert relative_error(got.numpy(), exact) <= SEED_TOLERANCE
    assert relative_error(got.numpy(), want) <= SEED_TOLERANCE + relative_error(want, exact)
    names = ("gate_proj", "val_proj", "out_proj") if seed_module is SwiGLUFeedForward else (
        "gate_proj", "up_proj", "down_proj")
    ref = reference(x.numpy(), *weights(seed, names))
    assert relative_error(got.numpy(), ref) <= tolerance(d, f)


def test_the_glassllm_known_values_through_torch():
    # glassllm's block (W1 gate, W3 up, W2 down, (in, out)); d = 1, f = 3.
    m = LlamaMLP(1, 3)
    with torch.no_grad():
        m.gate_proj.weight.copy_(torch.tensor([[-1.0], [0.0], [1.0]]))
        m.up_proj.weight.copy_(torch.tensor([[2.0], [3.0], [4.0]]))
        m.down_proj.weight.fill_(1.0)
    fast = SwiGLU.from_module(m, threads=1)
    x = torch.ones(1, 1)
    trace = fast.ffn.trace(x)
    assert isinstance(trace["ffn.act"], torch.Tensor)
    np.testing.assert_allclose(trace["ffn.act"].numpy(), [[-0.537883, 0.0, 2.924234]], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fast(x).detach().numpy(), [[2.386351]], rtol=1e-6)


def test_replace_mlps_in_a_stack_gives_the_same_outputs():
    torch.manual_seed(7)
    d, f = 48, 128
    model = Stack(d, f, layers=3).eval()
    x = torch.rand(2, 5, d) * 2 - 1
    with torch.no_grad():
        want = model(x)
    assert replace_mlps(model, threads=2) == 4  # three LlamaMLPs and the head
    assert all(isinstance(layer.mlp, SwiGLU) for layer in model.layers)
    assert isinstance(model.head, SwiGLU)
    assert replace_mlps(model) == 0  # nothing left to replace
    with torch.inference_mode():
        got = model(x)
    # Three residual layers deep: each layer's error is within the seed bound
    # of its output; the residual stream's scale is about that of y.
    assert relative_error(got.numpy(), want.numpy().astype(np.float64)) <= 4 * SEED_TOLERANCE


def test_shared_modules_stay_shared():
    mlp = LlamaMLP(8, 16)
    model = nn.Sequential(mlp, nn.Identity(), mlp)
    assert replace_mlps(model, threads=1) == 2
    assert model[0] is model[2] and isinstance(model[0], SwiGLU)


def test_default_threads_follow_torch_set_num_threads():
    """threads=0 (the default) is torch's count when the block is built, as
    torch.set_num_threads sets it; a count given is the block's own."""
    saved = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            block = SwiGLU.from_module(LlamaMLP(8, 16))
            assert block.ffn.implementation["threads"] == n and "threads=%d" % n in repr(block)
            model = nn.Sequential(LlamaMLP(8, 16))
            replace_mlps(model)
            assert model[0].ffn.threads == n
        torch.set_num_threads(1)
        assert SwiGLU.from_module(LlamaMLP(8, 16), threads=2).ffn.threads == 2
    finally:
        torch.set_num_threads(saved)


def test_modules_swiglu_cannot_run_are_refused_and_nothing_changes():
    biased = nn.Sequential(LlamaMLP(8, 16), LlamaMLP(8, 16, bias=True))
    with pytest.raises(ValueError, match=r"LlamaMLP\.gate_proj has a bias"):
        replace_mlps(biased)
    assert not any(isinstance(m, SwiGLU) for m in biased)  # the first was not replaced either
    with pytest.raises(ValueError, match="act_fn is GELU, not SiLU"):
        SwiGLU.from_module(LlamaMLP(8, 16, act=nn.GELU()))
    with pytest.raises(TypeError, match="is not a SwiGLU block"):
        SwiGLU.from_module(nn.Linear(8, 8))
    odd = LlamaMLP(8, 16)
    odd.down_proj = nn.Linear(12, 8, bias=False)
    with pytest.raises(ValueError, match="do not form a block"):
        SwiGLU.from_module(odd)
    # An act_fn that computes SiLU some other way (transformers' own class).
    SwiGLU.from_module(LlamaMLP(8, 16, act=lambda z: z * torch.sigmoid(z)))


@pytest.mark.parametrize("seed_module", [SwiGLUFeedForward, LlamaMLP])
def test_gradients_reach_the_input_and_the_weights_as_in_the_seed(seed_module):
    torch.manual_seed(11)
    d, f = 33, 61
    seed = seed_module(d, f)
    fast = SwiGLU.from_module(seed, threads=2)  # shares the seed's Linear layers
    params = list(seed.parameters())
    assert list(fast.parameters()) == params  # the same Parameters, still trainable
    x = (torch.rand(2, 7, d) * 2 - 1).requires_grad_()
    r = torch.rand(2, 7, d)  # L = sum(y * r)
    (seed(x) * r).sum().backward()
    want = [t.grad.clone() for t in [x] + params]
    for t in [x] + params:
        t.grad = None
    (fast(x) * r).sum().backward()
    # The backward's f32 bound (test_swiglu.py, backward_tolerance), for dx
    # and for each weight's gradient.
    bound = 16 * 2.0 ** -24 * (np.sqrt(d) + np.sqrt(2 * f) + np.sqrt(14)) + 1e-6
    for t, w in zip([x] + params, want):
        assert relative_error(t.grad.numpy(), w.numpy().astype(np.float64)) <= bound
    # Only what requires grad gets one (and only those are computed).
    for p in params:
        p.grad = None
    params[1].requires_grad_(False)
    x.grad = None
    (fast(x) * r).sum().backward()
    assert params[1].grad is None and params[0].grad is not None and x.grad is not None


def test_gradients_through_a_stack_and_refusals():
    torch.manual_seed(12)
    model = Stack(24, 64, layers=2)
    x = (torch.rand(3, 24) * 2 - 1).requires_grad_()
    model(x).square().sum().backward()
    want = x.grad.clone()
    x.grad = None
    replace_mlps(model, threads=2)
    model(x).square().sum().backward()
    assert relative_error(x.grad.numpy(), want.numpy().astype(np.float64)) <= 1e-5
    # The other layers still get their gradients.
    assert model.layers[0].mix.weight.grad is not None
    # A bf16 block has no backward: it says how to get one.
    bf16 = SwiGLU.from_module(LlamaMLP(8, 16), dtype="bf16", threads=1)
    if bf16.ffn.implementation["dtype"] == "bf16":
        with pytest.raises(RuntimeError, match="needs an f32 block"):
            bf16(torch.ones(2, 8, requires_grad=True))
        with torch.no_grad():
            assert bf16(torch.ones(2, 8, requires_grad=True)).shape == (2, 8)


def test_bfloat16_modules_pack_bf16_and_answer_in_bfloat16():
    torch.manual_seed(3)
    seed = LlamaMLP(64, 160).to(torch.bfloat16)
    fast = SwiGLU.from_module(seed, threads=1)
    assert fast.ffn.implementation["dtype"] == "bf16" or pytest.skip("no bf16 mode here")
    x = (torch.rand(3, 64) * 2 - 1).to(torch.bfloat16)
    y = fast(x)
    assert y.dtype == torch.bfloat16 and y.shape == x.shape
    ref = reference(x.float().numpy(), *(w.astype(np.float32) for w in weights(
        seed.float(), ("gate_proj", "up_proj", "down_proj"))))
    # The bf16 bound of the other suites (docs/formats.md).
    assert relative_error(y.float().numpy(), ref) <= 3e-2
    assert SwiGLU.from_module(seed, dtype="f32", threads=1).ffn.implementation["dtype"] == "f32"


def test_tensors_in_and_out_without_copies():
    w = random_block(16, 24)
    ffn = swiglu.Ffn(*w, threads=1)
    x = torch.rand(3, 16) * 2 - 1
    expected = ffn(x.numpy())
    y = ffn(x)
    assert isinstance(y, torch.Tensor)
    np.testing.assert_array_equal(y.numpy(), expected)
    out = torch.empty(3, 16)
    assert ffn.forward(x, out=out) is out
    same = x.clone()
    assert ffn.forward(same, out=same) is same  # in place, in the tensor's memory
    np.testing.assert_array_equal(same.numpy(), expected)
    with torch.inference_mode():
        np.testing.assert_array_equal(ffn(x.clone()).numpy(), expected)


def test_dlpack_producers_that_are_not_tensors():
    class Exporter:  # only the DLPack protocol, as other array libraries offer it
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    w = random_block(16, 24)
    ffn = swiglu.Ffn(*w, threads=1)
    x = np.random.default_rng(4).uniform(-1, 1, (2, 16)).astype(np.float32)
    np.testing.assert_array_equal(ffn(Exporter(x)), ffn(x))


def test_bad_tensors_raise_and_leave_out_untouched():
    ffn = swiglu.Ffn(*random_block(8, 12), threads=1)
    x = torch.ones(2, 8)
    out = torch.full((2, 8), 7.0)
    cases = [
        (TypeError, "float32", lambda: ffn.forward(x.double(), out=out)),
        (ValueError, r"shape \(\.\.\., 8\)", lambda: ffn.forward(torch.ones(2, 9), out=out)),
        (ValueError, "not contiguous", lambda: ffn.forward(torch.ones(8, 2).t(), out=out)),
        (TypeError, "out must be float32", lambda: ffn.forward(x, out=out.double())),
        (ValueError, "out must be contiguous", lambda: ffn.forward(x, out=torch.ones(8, 2).t())),
        (ValueError, "out must have x's shape", lambda: ffn.forward(x, out=torch.empty(3, 8))),
        (ValueError, "out must have x's shape", lambda: ffn.forward(x, out=torch.empty(1, 16))),
        (TypeError, "CPU tensor", lambda: ffn.forward(x.to("meta"), out=out)),
        (RuntimeError, "out requires grad", lambda: ffn.forward(x, out=torch.empty(2, 8, requires_grad=True))),
        (RuntimeError, "records no autograd history",
         lambda: ffn.forward(torch.ones(2, 8, requires_grad=True), out=out)),
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match=message):
            call()
        assert torch.all(out == 7.0)
    # copy=True converts dtype and layout.
    want = ffn(x)
    np.testing.assert_allclose(ffn.forward(x.double(), copy=True).numpy(), want.numpy())
    np.testing.assert_allclose(ffn.forward(torch.ones(8, 2).t(), copy=True).numpy(), want.numpy())


def test_eight_python_threads_on_one_module_get_the_serial_bits():
    torch.manual_seed(5)
    fast = SwiGLU.from_module(LlamaMLP(256, 704), threads=2)
    xs = [torch.rand(1 + i, 256) * 2 - 1 for i in range(8)]
    serial = [fast(x) for x in xs]
    for got, want in zip(concurrent_results(fast, xs), serial):
        assert torch.equal(got, want)
