#!/usr/bin/env bash
# Installs the Debian 12 packages that the sanitizer and fuzzing stages of CI
# need on top of scripts/install-deps.sh, only those missing:
#   clang, libclang-rt-14-dev   libFuzzer and clang's sanitizer runtimes
#   libomp-14-dev               OpenMP for clang (the project's CMake requires it)
#   python3                     scripts/make_hostile_corpus.py (standard library only)
# (The GCC sanitizer runtimes, libasan8, libubsan1 and libtsan2, come with g++.)
set -euo pipefail

packages=(clang libclang-rt-14-dev libomp-14-dev python3)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
