#!/usr/bin/env bash
# Our block against llama.cpp's ggml CPU backend, in one process with the
# same weights (bench/peers/README.md, "ggml").
#
#   bench/peers/run_ggml.sh GGML_DIR [--quick] [--moe] [--probe] [swiglu_ggml_peer options]
#
# GGML_DIR: any checkout of https://github.com/ggml-org/ggml. Configures and
# builds our tree with -DSWIGLU_GGML_DIR=GGML_DIR (ggml as llama.cpp builds
# it: Release, GGML_NATIVE, CPU backend, OpenMP, llamafile, CPU repack), then
# prints the machine, both commits and the table. --quick: no llama7b.
# --moe: the MoE rows (routed experts of qwen3moe, olmoe, mixtral; ggml's
# side as llama.cpp's build_moe_ffn) instead of the dense block's; with
# --shapes, only the MoE shapes named. --probe: our bench's machine probe
# (peak FLOP rates, DRAM read) first.
# Environment: BUILD_DIR (default build), JOBS (default 2), EXTRA_TARGETS
# (more targets to build first, space-separated: scripts/peers.sh adds the
# Python module). Builds run under
# `flock -s /tmp/cpu.lock`, the timing under `flock -x /tmp/cpu.lock`.
set -euo pipefail

if [[ $# -lt 1 || ! -f "$1/include/ggml.h" ]]; then
    echo "usage: $0 GGML_DIR [--quick] [--moe] [--probe] [swiglu_ggml_peer options]" >&2
    echo "  GGML_DIR: a checkout of https://github.com/ggml-org/ggml" >&2
    exit 2
fi
ggml_dir=$(cd "$1" && pwd)
shift
probe=0
peer_args=()
for a in "$@"; do
    case "$a" in
        --probe) probe=1 ;;
        *) peer_args+=("$a") ;;
    esac
done

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-2}
lock=/tmp/cpu.lock
launcher=()
mkdir -p "$build"
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

flock -s "$lock" cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DSWIGLU_GGML_DIR="$ggml_dir" > "$build/ggml-configure.log" 2>&1 ||
    { tail -30 "$build/ggml-configure.log"; exit 1; }
read -r -a extra <<< "${EXTRA_TARGETS:-}"
targets=(swiglu_ggml_peer "${extra[@]}")
if [[ $probe == 1 ]]; then targets+=(swiglu_bench); fi
flock -s "$lock" cmake --build "$build" -j"$jobs" --target "${targets[@]}" \
    > "$build/ggml-build.log" 2>&1 || { tail -30 "$build/ggml-build.log"; exit 1; }

ours=$(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)
if [[ -n $(git -C "$root" status --porcelain --untracked-files=no 2> /dev/null) ]]; then
    ours="$ours (modified)"
fi
theirs=$(git -C "$ggml_dir" rev-parse HEAD 2> /dev/null || echo "unknown (not a git checkout)")
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
echo "swiglu:  $ours"
echo "ggml:    $theirs ($ggml_dir)"
echo "command: bench/peers/run_ggml.sh GGML_DIR $*"

flock -x "$lock" bash -c '
    if [[ $1 == 1 ]]; then "$2/bench/swiglu_bench" --probe; fi
    shift 2
    exec "$@"' _ "$probe" "$build" "$build/bench/peers/swiglu_ggml_peer" "${peer_args[@]}"
