#!/usr/bin/env bash
# The main job: installs what is missing, builds Release, and profiles the
# block on the built-in model shapes (glass, cyber, llama7b at 1, 16 and 512
# tokens, all cores), printed as a table with the oneDNN baseline beside it.
# Extra arguments go to swiglu_bench (e.g. --quick to skip llama7b). Ends
# saying where the binaries are (SWIGLU_INSTALL_PREFIX=DIR: installs them there).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/bench/swiglu_bench --profile "$@"
bash scripts/built.sh
