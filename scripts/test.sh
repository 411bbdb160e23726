#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test, and
# says where the binaries are (SWIGLU_INSTALL_PREFIX=DIR: installs them there).
set -euo pipefail
cd "$(dirname "$0")/.."
# PyTorch only for the tests of swiglu.torch (test/python/test_torch.py).
bash scripts/install-deps.sh python3-torch
bash scripts/build.sh
# Every core: the long suites (hostile, dtype, the profile checks, mpi_cli)
# run mostly in one thread; 2 at a time on 2 cores: 147 -> 94-102 s.
ctest --test-dir build --output-on-failure -j"$(nproc)"
bash scripts/built.sh
