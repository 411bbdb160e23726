#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds and runs three tiny
# consumers against it: C through pkg-config, C++ through find_package, and
# Python through PYTHONPATH.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in include/swiglu/swiglu.hpp include/swiglu/swiglu.h include/swiglu/mpi.hpp bin/swiglu bin/swiglu-mpi bin/swiglu_bench \
         lib/cmake/swiglu/swigluConfig.cmake lib/cmake/swiglu/swigluConfigVersion.cmake \
         lib/pkgconfig/swiglu.pc; do
  [ -e "$work/prefix/$f" ] || { echo "missing from the install: $f"; exit 1; }
done
libdir=$(dirname "$(find "$work/prefix" -name 'libswiglu.so' | head -n1)")

# C, through pkg-config.
export PKG_CONFIG_PATH="$libdir/pkgconfig:$work/prefix/lib/pkgconfig"
cc -std=c99 -Wall -Werror "$here/consumer.c" -o "$work/consumer_c" $(pkg-config --cflags --libs swiglu)
LD_LIBRARY_PATH="$libdir" "$work/consumer_c"

# C++, through find_package(swiglu).
cmake -S "$here" -B "$work/cpp" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cpp" -j2 >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cpp/consumer"

# Python: the installed package, found through PYTHONPATH alone.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
site=$(dirname "$(find "$work/prefix" -path '*/dist-packages/swiglu' -type d | head -n1)")
for f in __init__.py torch.py; do
  [ -e "$site/swiglu/$f" ] || { echo "missing from the install: the Python package's $f"; exit 1; }
done
PYTHONPATH="$site" "$python" -c '
import numpy as np, swiglu
ffn = swiglu.Ffn([[-1.0, 0.0, 1.0]], [[2.0, 3.0, 4.0]], [[1.0], [1.0], [1.0]], layout="in_out")
y = ffn(np.ones((1, 1), np.float32))
assert abs(y[0, 0] - 2.386351) < 1e-5, y
print("swiglu %s (python): y = %.6f" % (swiglu.version(), y[0, 0]))'
echo "package consumers: 3 passed, 0 failed"
