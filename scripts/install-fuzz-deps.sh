#!/usr/bin/env bash
# Installs, on top of what scripts/install-deps.sh does, the Debian 12
# packages that the sanitizer and fuzzing stages of CI need (only missing ones):
#   clang, libclang-rt-14-dev   libFuzzer and clang's sanitizer runtimes
#   libomp-14-dev               OpenMP for clang (the project's CMake requires it)
#   clang-format                CI's check that the tree is formatted (.clang-format)
# (The GCC sanitizer runtimes, libasan8, libubsan1 and libtsan2, come with g++.)
set -euo pipefail
exec bash "$(dirname "$0")/install-deps.sh" clang libclang-rt-14-dev libomp-14-dev clang-format
