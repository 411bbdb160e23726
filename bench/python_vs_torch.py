"""swiglu.torch against the seed module in PyTorch, in one process: the
CyberSLM-style SwiGLUFeedForward (gate_proj, val_proj, out_proj) at the cyber
(d = 384, f = 1024) and LLaMA-7B (4096, 11008) shapes, called under
torch.inference_mode() on (tokens, d) inputs, against SwiGLU.from_module of
the same module. Both sides get every core (torch.set_num_threads, swiglu's
threads = 0). Pairs, each run interleaved, median of rounds:

    torch f32   vs swiglu f32   (Debian's torch runs f32 Linear on the
                                 reference BLAS: the peer a user has)
    torch dnnl  vs swiglu f32   (the same module through
                                 torch.utils.mkldnn.to_mkldnn: f32 Linear on
                                 oneDNN, the strongest f32 torch offers here)
    torch bf16  vs swiglu bf16  (bf16 Linear: oneDNN on CPUs with AVX512
                                 bf16 support, torch's own loops elsewhere)
    torch bf16  vs swiglu q4_0  (decode: bytes per weight decide it)

    PYTHONPATH=build/python /usr/bin/python3 bench/python_vs_torch.py [--quick] [--backward]

--backward: the training step instead, forward and backward with every
gradient (dx, dW_gate, dW_up, dW_down) for a given dy: torch autograd on
the seed module (f32 on the reference BLAS, as Debian's torch runs it)
against swiglu's forward_for_backward + backward, at cyber (512 tokens) and
llama7b (32 tokens: the reference BLAS takes ~20 s a call at 512).
--quick: cyber only and fewer rounds. Hold `flock -x /tmp/cpu.lock`.
"""
import argparse
import copy
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils import mkldnn

import swiglu
from swiglu.torch import SwiGLU


class SwiGLUFeedForward(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate_proj = nn.Linear(d, f, bias=False)
        self.val_proj = nn.Linear(d, f, bias=False)
        self.out_proj = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.out_proj(F.silu(self.gate_proj(x)) * self.val_proj(x))


def onednn_forward(seed):
    """seed's forward with its Linear layers on oneDNN (to_mkldnn). SiLU and
    the product have no oneDNN-layout kernels in torch: dense between."""
    m = mkldnn.to_mkldnn(copy.deepcopy(seed))  # it replaces the children in place

    def forward(x):
        xm = x.to_mkldnn()
        act = F.silu(m.gate_proj(xm).to_dense()) * m.val_proj(xm).to_dense()
        return m.out_proj(act.to_mkldnn()).to_dense()
    return forward


def seconds_per_call(fn, x, budget):
    """Calls fn(x) for about `budget` seconds (at least 2 calls): s per call."""
    fn(x)  # first call: primitive creation, scratch
    calls, start = 0, time.perf_counter()
    while calls < 2 or time.perf_counter() - start < budget:
        fn(x)
        calls += 1
    return (time.perf_counter() - start) / calls


def compare(peer, ours, x, rounds, budget):
    """Median per-call time of each, measured alternately."""
    a, b = [], []
    for _ in range(rounds):
        a.append(seconds_per_call(peer, x, budget))
        b.append(seconds_per_call(ours, x, budget))
    return statistics.median(a), statistics.median(b)


def training_step_table(args):
    """torch autograd (forward + backward, all gradients) against swiglu."""
    rounds, budget = (3, 0.2) if args.quick else (3, 0.5)
    shapes = [("cyber", 384, 1024, 512)]
    if not args.quick:
        shapes.append(("llama7b", 4096, 11008, 32))
    print("%-8s %6s  %12s %12s %9s" % ("shape", "tokens", "torch ms", "swiglu ms", "speed-up"))
    for shape, d, f, tokens in shapes:
        seed = SwiGLUFeedForward(d, f)
        ffn = swiglu.Ffn(*(p.weight.detach().numpy() for p in (seed.gate_proj, seed.val_proj,
                                                                seed.out_proj)))
        x = torch.rand(tokens, d) * 2 - 1
        dy = torch.rand(tokens, d) * 2 - 1
        grads = {name: torch.empty(ffn.gradient_shape(name)) for name in ("gate", "up", "down")}

        def torch_step(x):
            xg = x.detach().requires_grad_()
            seed.zero_grad(set_to_none=False)
            seed(xg).backward(dy)
            return xg.grad

        def swiglu_step(x):
            _, saved = ffn.forward_for_backward(x)
            return ffn.backward(x, dy, saved, grads=grads)[0]

        dx_t, dx_s = torch_step(x), swiglu_step(x)
        scale = float(dx_t.abs().max())
        assert float((dx_t - dx_s).abs().max()) <= 1e-4 * scale, "swiglu's dx disagrees with torch's"
        t_torch, t_ours = compare(torch_step, swiglu_step, x, rounds, budget)
        print("%-8s %6d  %12.2f %12.2f %8.1fx" % (shape, tokens, t_torch * 1e3, t_ours * 1e3,
                                                 t_torch / t_ours), flush=True)
        del seed, ffn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backward", action="store_true")
    args = parser.parse_args()
    threads = len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    shapes = [("cyber", 384, 1024, (1, 32, 256))]
    if not args.quick:
        shapes.append(("llama7b", 4096, 11008, (1, 32)))
    rounds, budget = (3, 0.2) if args.quick else (5, 0.5)
    print("threads %d (torch %s, %d threads; swiglu %s)" % (
        threads, torch.__version__, torch.get_num_threads(), swiglu.version()))
    if args.backward:
        training_step_table(args)
        return
    print("%-8s %6s  %-22s %12s %12s %9s" % ("shape", "tokens", "pair", "torch ms", "swiglu ms",
                                              "speed-up"))
    for shape, d, f, token_counts in shapes:
        seed32 = SwiGLUFeedForward(d, f).eval()
        seed16 = SwiGLUFeedForward(d, f).eval()
        seed16.load_state_dict(seed32.state_dict())
        seed16.to(torch.bfloat16)
        ours = {dtype: SwiGLU.from_module(seed32, dtype=dtype) for dtype in ("f32", "bf16", "q4_0")}
        pairs = [("f32 vs f32", seed32, ours["f32"], torch.float32),
                 ("f32 oneDNN vs f32", onednn_forward(seed32), ours["f32"], torch.float32),
                 ("bf16 vs bf16", seed16, ours["bf16"], torch.bfloat16),
                 ("bf16 vs q4_0", seed16, ours["q4_0"], torch.bfloat16)]
        for tokens in token_counts:
            for pair, peer, mine, dtype in pairs:
                if pair == "bf16 vs q4_0" and tokens > 1:
                    continue
                x = (torch.rand(tokens, d) * 2 - 1).to(dtype)
                with torch.inference_mode():
                    t_peer, t_ours = compare(peer, mine, x, rounds, budget)
                print("%-8s %6d  %-22s %12.3f %12.3f %8.2fx" % (
                    shape, tokens, pair, t_peer * 1e3, t_ours * 1e3, t_peer / t_ours), flush=True)
        del seed32, seed16, ours


if __name__ == "__main__":
    main()
