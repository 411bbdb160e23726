#!/usr/bin/env bash
# Runs the libFuzzer targets (safetensors, index, gguf, npy) for a bounded time each, seeded with the
# hostile corpus (scripts/make_hostile_corpus.py) and the dictionaries here.
#
#   bash fuzz/run.sh BUILD_DIR [SECONDS=60] [CORPUS_DIR]
#
# BUILD_DIR is a tree configured with -DSWIGLU_FUZZ=ON and clang (see
# fuzz/CMakeLists.txt). CORPUS_DIR, if given, keeps the corpora
# (CORPUS_DIR/safetensors, CORPUS_DIR/index, CORPUS_DIR/gguf, CORPUS_DIR/npy) between runs, so long runs build
# on each other; otherwise they live in a temporary directory. A crashing
# input is saved as CORPUS_DIR/artifacts/crash-* (or under the temporary
# directory, whose path is printed) and the script fails; a temporary
# directory is removed when every target ends clean (each run's is ~35 MB).
# Prints, per target: executions, corpus size, and findings.
#
# The targets run side by side, SWIGLU_FUZZ_JOBS at a time (default: the
# number of cores): each libFuzzer process is single-threaded, so on 2 cores
# the four take 2 x SECONDS instead of 4 x, and each still gets SECONDS of
# a core to itself.
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [SECONDS] [CORPUS_DIR]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ge 3 ]; then
  keep=$3
  mkdir -p "$keep"
  keep=$(cd "$keep" && pwd)
  made_keep=0
else
  keep=$(mktemp -d "${TMPDIR:-/tmp}/swiglu-fuzz.XXXXXX")
  made_keep=1
fi
seeds=$(mktemp -d "${TMPDIR:-/tmp}/swiglu-fuzz-seeds.XXXXXX")
trap 'rm -rf "$seeds"' EXIT
python3 "$here/../scripts/make_hostile_corpus.py" "$seeds" >/dev/null || exit 1
mkdir -p "$keep/safetensors" "$keep/index" "$keep/gguf" "$keep/npy" "$keep/artifacts"
cp -n "$seeds"/*.safetensors "$keep/safetensors/"
cp -n "$seeds"/*.json "$keep/index/"
cp -n "$seeds"/*.gguf "$keep/gguf/"
cp -n "$seeds"/*.npy "$keep/npy/"

# Leaks, UB and memory errors all end the run; -error_exitcode marks them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: its log in $keep/fuzz_TARGET.log, its exit status in
# $keep/fuzz_TARGET.rc (read once every target has ended).
fuzz_one() {
  local target=$1
  "$build/fuzz/fuzz_$target" "$keep/$target" \
      -dict="$here/$target.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -use_value_profile=1 -print_final_stats=1 -error_exitcode=77 \
      -artifact_prefix="$keep/artifacts/${target}-" >"$keep/fuzz_$target.log" 2>&1
  echo $? >"$keep/fuzz_$target.rc"
}

jobs=${SWIGLU_FUZZ_JOBS:-$(nproc)}
targets=(safetensors index gguf npy)
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait

status=0
for target in "${targets[@]}"; do
  log=$keep/fuzz_$target.log
  rc=$(cat "$keep/fuzz_$target.rc" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(ls "$keep/$target" | wc -l)
  findings=$(ls "$keep/artifacts" | grep -c "^${target}-" || true)
  echo "fuzz_$target: ${execs:-?} executions in ${seconds} s, corpus $corpus files, findings $findings, exit $rc"
  if [ "$rc" != 0 ] || [ "$findings" -ne 0 ]; then
    status=1
    grep -E "ERROR|runtime error|invariant broken|SUMMARY|Test unit written" "$log" | head -20
    echo "full log: $log; inputs: $keep/artifacts"
  fi
done
if [ "$status" -eq 0 ] && [ "$made_keep" -eq 1 ]; then rm -rf "$keep"; fi
exit $status
