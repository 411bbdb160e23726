#!/usr/bin/env bash
# Installs ./build system-wide (cmake --install, default prefix /usr/local)
# and builds the two consumers of test/package against it as a user would:
# no CMAKE_PREFIX_PATH, no PKG_CONFIG_PATH, no LD_LIBRARY_PATH; then imports
# the Python package with no PYTHONPATH. Meant for the
# fresh Debian 12 stage of .ci/run (it writes to /usr/local).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install build >/dev/null
ldconfig

cc -std=c99 -Wall -Werror test/package/consumer.c -o "$work/consumer_c" $(pkg-config --cflags --libs swiglu)
"$work/consumer_c"

cmake -S test/package -B "$work/cpp" >/dev/null
cmake --build "$work/cpp" -j"$(nproc)" >/dev/null
"$work/cpp/consumer"

# Python: the package where Debian's python3 looks, no PYTHONPATH.
(cd "$work" && /usr/bin/python3 -c 'import numpy as np, swiglu
ffn = swiglu.Ffn([[-1.0, 0.0, 1.0]], [[2.0, 3.0, 4.0]], [[1.0], [1.0], [1.0]], layout="in_out")
print("swiglu %s (python): y = %.6f" % (swiglu.version(), ffn(np.ones((1, 1), np.float32))[0, 0]))')
# swiglu.torch, where PyTorch is installed (the test command installs it).
passed=3
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  (cd "$work" && /usr/bin/python3 -c 'import torch, swiglu.torch
m = torch.nn.Module()
for name, shape in (("gate_proj", (3, 1)), ("up_proj", (3, 1)), ("down_proj", (1, 3))):
    setattr(m, name, torch.nn.Linear(shape[1], shape[0], bias=False))
with torch.no_grad():
    m.gate_proj.weight.copy_(torch.tensor([[-1.0], [0.0], [1.0]]))
    m.up_proj.weight.copy_(torch.tensor([[2.0], [3.0], [4.0]]))
    m.down_proj.weight.fill_(1.0)
print("swiglu.torch: y = %.6f" % swiglu.torch.SwiGLU.from_module(m)(torch.ones(1, 1)).item())')
  passed=4
fi
echo "installed-package consumers: $passed passed, 0 failed"
