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

status=0
for target in safetensors index gguf npy; do
  log=$keep/fuzz_$target.log
  "$build/fuzz/fuzz_$target" "$keep/$target" \
      -dict="$here/$target.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -use_value_profile=1 -print_final_stats=1 -error_exitcode=77 \
      -artifact_prefix="$keep/artifacts/${target}-" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(ls "$keep/$target" | wc -l)
  findings=$(ls "$keep/artifacts" | grep -c "^${target}-" || true)
  echo "fuzz_$target: ${execs:-?} executions in ${seconds} s, corpus $corpus files, findings $findings, exit $rc"
  if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
    status=1
    grep -E "ERROR|runtime error|invariant broken|SUMMARY|Test unit written" "$log" | head -20
    echo "full log: $log; inputs: $keep/artifacts"
  fi
done
if [ "$status" -eq 0 ] && [ "$made_keep" -eq 1 ]; then rm -rf "$keep"; fi
exit $status
