#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds and runs three tiny
# consumers against it: C through pkg-config, C++ through find_package, and
# Python through PYTHONPATH. The prefix is no system directory (like
# /opt/swiglu): the consumers must run without LD_LIBRARY_PATH, the package
# putting its lib/ in their run path (issue 44), the C++ one also once
# installed (cmake --install drops CMake's own build-tree run path).
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
unset LD_LIBRARY_PATH
# libswiglu_mpi finds libswiglu beside it.
if [ -e "$libdir/libswiglu_mpi.so" ]; then
  readelf -d "$libdir/libswiglu_mpi.so" | grep -q 'R.*PATH.*\[\$ORIGIN\]' ||
    { echo "libswiglu_mpi.so: no \$ORIGIN run path"; readelf -d "$libdir/libswiglu_mpi.so" | grep PATH; exit 1; }
fi

# C, through pkg-config.
export PKG_CONFIG_PATH="$libdir/pkgconfig:$work/prefix/lib/pkgconfig"
cc -std=c99 -Wall -Werror "$here/consumer.c" -o "$work/consumer_c" $(pkg-config --cflags --libs swiglu)
"$work/consumer_c"

# The README's C snippet compiles as shown, warning-free; with the mistake
# a user made (int for the int64_t sizes swiglu_ffn_dims writes), it fails
# under -Werror, naming the incompatible pointer type.
readme=$here/../../README.md
sed -n '/^## Quick start: C$/,/^```$/p' "$readme" | sed '1,/^```c$/d;/^```$/d' >"$work/readme.c"
grep -q swiglu_ffn_dims "$work/readme.c" || { echo "README: no C snippet with swiglu_ffn_dims"; exit 1; }
cc -std=c99 -Wall -Werror -c "$work/readme.c" -o "$work/readme.o" $(pkg-config --cflags swiglu)
sed 's/int64_t d_out, f_out;/int d_out, f_out;/' "$work/readme.c" >"$work/readme_int.c"
if cc -std=c99 -Wall -Werror -c "$work/readme_int.c" -o "$work/readme_int.o" \
     $(pkg-config --cflags swiglu) 2>"$work/readme_int.err"; then
  echo "an int* to swiglu_ffn_dims compiled under -Werror"; exit 1
fi
grep -q incompatible-pointer-types "$work/readme_int.err" ||
  { cat "$work/readme_int.err"; echo "an int* to swiglu_ffn_dims: not the expected diagnostic"; exit 1; }

# C++, through find_package(swiglu).
cmake -S "$here" -B "$work/cpp" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cpp" -j2 >/dev/null
"$work/cpp/consumer" >/dev/null
cmake --install "$work/cpp" --prefix "$work/consumer" >/dev/null
"$work/consumer/bin/consumer"

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
