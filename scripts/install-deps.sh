#!/usr/bin/env bash
# Installs the Debian 12 packages swiglu builds on, plus any named as
# arguments, only those missing (with nothing missing it runs no apt at all:
# the second of the README's commands installs nothing the first did). Run
# as root (or with sudo) on a fresh machine.
# Installs with --no-install-recommends, so every package a step needs is
# named here, not left to a recommendation that a development machine happens
# to have (.ci/run proves the list in a fresh Debian 12 minbase system):
#   cmake make g++ gcc pkg-config   the build; gcc and pkg-config for the C consumer
#                                   of the installed package (test/package)
#   libdnnl-dev                     oneDNN 2.6, the matmuls
#   ocl-icd-opencl-dev              OpenCL headers and loader: Debian's oneDNN CMake
#                                   config requires them (only recommended by libdnnl-dev)
#   libxsimd-dev                    the SIMD kernels
#   nlohmann-json3-dev              safetensors headers are JSON
#   libcli11-dev                    the `swiglu` command's options
#   doctest-dev libbenchmark-dev    the tests and swiglu_bench
#   python3                         the hostile-input corpus generator (tests, fuzzers)
#   python3-dev pybind11-dev        the Python module (src/python)
#   python3-numpy python3-pytest    its tests (test/python)
#   libopenmpi-dev openmpi-bin      swiglu_mpi (include/swiglu/mpi.hpp) and mpirun for its
#                                   tests and benchmark
# scripts/test.sh adds python3-torch (PyTorch 1.13, for the tests of
# swiglu.torch): 136 MB that nothing else needs.
set -euo pipefail

packages=(cmake make g++ gcc pkg-config libdnnl-dev ocl-icd-opencl-dev libxsimd-dev
          nlohmann-json3-dev libcli11-dev doctest-dev libbenchmark-dev python3 python3-dev
          pybind11-dev python3-numpy python3-pytest libopenmpi-dev openmpi-bin "$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
# apt speaks English, so that the lock wait below recognises its message.
export LC_ALL=C
# Another apt (unattended-upgrades on a new machine, a second terminal) may
# hold the locks: wait for it, up to 10 minutes, instead of failing at once.
# DPkg::Lock::Timeout (apt >= 1.9.11; Debian 12 has 2.6) waits for dpkg's
# lock; apt-get update takes the lists' lock, which it does not cover, so
# update is retried while that one is held.
lock_wait=${SWIGLU_APT_LOCK_WAIT:-600}
apt=("${as_root[@]}" apt-get -o "DPkg::Lock::Timeout=$lock_wait")
waited=0
while ! errors=$("${apt[@]}" update -qq 2>&1 >/dev/null); do
  if ! grep -q "Could not get lock" <<<"$errors" || [ "$waited" -ge "$lock_wait" ]; then
    echo "$errors" >&2
    exit 1
  fi
  [ "$waited" -gt 0 ] || echo "another apt holds the package lists' lock: waiting (up to $lock_wait s)"
  sleep 5
  waited=$((waited + 5))
done
[ -z "$errors" ] || echo "$errors" >&2  # warnings of a successful update
"${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}"
