#!/usr/bin/env bash
# Installs ./build system-wide (cmake --install, default prefix /usr/local)
# and builds the two consumers of test/package against it as a user would:
# no CMAKE_PREFIX_PATH, no PKG_CONFIG_PATH, no LD_LIBRARY_PATH, and no
# ldconfig (the README asks for none); then imports the Python package with
# no PYTHONPATH. Then the same into /opt/swiglu, the README's prefix, which
# the loader never searches: the consumers, built through pkg-config and
# find_package, and the C++ one once installed itself, must run without
# LD_LIBRARY_PATH (issue 44: "libswiglu.so.0: cannot open shared object
# file"), and so must the installed commands. Meant for the fresh Debian 12
# stage of .ci/run (it writes to /usr/local and /opt).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH

cmake --install build >/dev/null

cc -std=c99 -Wall -Werror test/package/consumer.c -o "$work/consumer_c" $(pkg-config --cflags --libs swiglu)
"$work/consumer_c"

cmake -S test/package -B "$work/cpp" >/dev/null
cmake --build "$work/cpp" -j"$(nproc)" >/dev/null
"$work/cpp/consumer"

# Python: the package where Debian's python3 looks, no PYTHONPATH.
(cd "$work" && /usr/bin/python3 -c 'import numpy as np, swiglu
ffn = swiglu.Ffn([[-1.0, 0.0, 1.0]], [[2.0, 3.0, 4.0]], [[1.0], [1.0], [1.0]], layout="in_out")
print("swiglu %s (python): y = %.6f" % (swiglu.version(), ffn(np.ones((1, 1), np.float32))[0, 0]))')

# /opt/swiglu: no system directory, no ldconfig entry.
cmake --install build --prefix /opt/swiglu >/dev/null
/opt/swiglu/bin/swiglu info >/dev/null
cc -std=c99 -Wall -Werror test/package/consumer.c -o "$work/opt_c" \
  $(PKG_CONFIG_PATH=/opt/swiglu/lib/pkgconfig pkg-config --cflags --libs swiglu)
"$work/opt_c"
cmake -S test/package -B "$work/opt_cpp" -DCMAKE_PREFIX_PATH=/opt/swiglu >/dev/null
cmake --build "$work/opt_cpp" -j"$(nproc)" >/dev/null
cmake --install "$work/opt_cpp" --prefix "$work/opt_consumer" >/dev/null
"$work/opt_consumer/bin/consumer"

# swiglu.torch, where PyTorch is installed (the test command installs it).
passed=6
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
  passed=7
fi
echo "installed-package consumers: $passed passed, 0 failed"
