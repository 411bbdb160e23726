#!/usr/bin/env bash
# Says where the build put what a user calls (the last lines of
# scripts/test.sh and scripts/profile.sh), and with SWIGLU_INSTALL_PREFIX set
# installs it there first (cmake --install), e.g.
#   SWIGLU_INSTALL_PREFIX=/opt/swiglu bash scripts/test.sh
# Takes the build folder (default build).
set -euo pipefail
# A relative prefix is the caller's, not the repository's.
case ${SWIGLU_INSTALL_PREFIX:-/} in
  /*) ;;
  *) SWIGLU_INSTALL_PREFIX=$PWD/$SWIGLU_INSTALL_PREFIX ;;
esac
cd "$(dirname "$0")/.."
build=${1:-build}
build_dir=$(cd "$build" && pwd)
if [ -n "${SWIGLU_INSTALL_PREFIX:-}" ]; then
  cmake --install "$build" --prefix "$SWIGLU_INSTALL_PREFIX" >/dev/null
  where=$SWIGLU_INSTALL_PREFIX/bin
  echo "installed into $SWIGLU_INSTALL_PREFIX (bin/, lib/, include/, lib/cmake/swiglu, lib/pkgconfig/swiglu.pc)"
  libs=$SWIGLU_INSTALL_PREFIX/lib
else
  where=$build_dir
  libs=$build_dir/src
fi
[ -n "${SWIGLU_INSTALL_PREFIX:-}" ] && echo "installed:" || echo "built:"
for f in src/cli/swiglu src/cli/swiglu-mpi bench/swiglu_bench; do
  name=$(basename "$f")
  path=$where/$f
  [ -n "${SWIGLU_INSTALL_PREFIX:-}" ] && path=$where/$name
  [ -x "$path" ] || continue
  case $name in
    swiglu) what="the command (swiglu info; swiglu run --help)" ;;
    swiglu-mpi) what="the sharded command (under mpirun)" ;;
    swiglu_bench) what="the benchmark (--profile, --ridge)" ;;
  esac
  printf '  %-48s %s\n' "$path" "$what"
done
printf '  %-48s %s\n' "$libs/libswiglu.so" "the library (C and C++; docs/api.md)"
[ -n "${SWIGLU_INSTALL_PREFIX:-}" ] ||
  printf '  %-48s %s\n' "$build_dir/python" "the Python package: PYTHONPATH=$build_dir/python"
[ -n "${SWIGLU_INSTALL_PREFIX:-}" ] ||
  echo "install them: cmake --install $build --prefix /opt/swiglu (or SWIGLU_INSTALL_PREFIX=/opt/swiglu with either script)"
