#!/usr/bin/env bash
# Runs `swiglu run` on every file of the hostile corpus
# (scripts/make_hostile_corpus.py): each st_*.safetensors, idx_*.json (a
# sharded checkpoint's index) and gguf_*.gguf as --weights with a valid input, each npy_*.npy as --input with valid weights, plus a few bad
# command lines. Every one must
#   - exit with status 2 (no signal, no hang: each run is capped at 60 s),
#   - print nothing on stdout and exactly one line on stderr, starting with
#     "swiglu: error: " and naming the offending file (or option),
#   - leave the existing output file byte-identical and no other file behind
#     (in the output directory or next to the inputs).
# The valid_* files must run successfully (exit 0, a y.npy written).
#
#   bash test/hostile/run.sh path/to/swiglu      # prints "N passed, M failed"
set -uo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 path/to/swiglu" >&2
  exit 2
fi
cli=$1
here=$(cd "$(dirname "$0")" && pwd)
generator=$here/../../scripts/make_hostile_corpus.py

if ! command -v python3 >/dev/null; then
  # ctest marks this as skipped (SKIP_RETURN_CODE 77), not passed.
  echo "python3 not found: cannot generate the hostile corpus (apt-get install python3-minimal)"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/swiglu-hostile.XXXXXX")
trap 'rm -rf "$work"' EXIT
corpus=$work/corpus
out=$work/out
mkdir -p "$corpus" "$out"
python3 "$generator" "$corpus" >/dev/null || { echo "corpus generation failed"; exit 1; }

sentinel=$work/sentinel
printf 'sentinel: an existing output that no failure may touch\n\x00\xff' >"$sentinel"
y=$out/y.npy
corpus_listing=$(ls -A "$corpus")

passed=0
failed=0
fail() {
  echo "FAIL $1: $2"
  [ -s "$work/stderr" ] && sed 's/^/    stderr: /' "$work/stderr" | head -5
  failed=$((failed + 1))
}

# Runs the command with "$@" after `run`; leaves the status in $rc.
run_cli() {
  cp "$sentinel" "$y"
  timeout 60 "$cli" run "$@" --output "$y" >"$work/stdout" 2>"$work/stderr"
  rc=$?
}

# The command must fail cleanly. $1: a name for the report; $2: what stderr
# must mention; the rest: the arguments after `run` (--output is added).
expect_refusal() {
  local name=$1 needle=$2
  shift 2
  run_cli "$@"
  if [ "$rc" -eq 124 ]; then fail "$name" "timed out (60 s)"; return; fi
  if [ "$rc" -gt 128 ]; then fail "$name" "killed by signal $((rc - 128))"; return; fi
  if [ "$rc" -ne 2 ]; then fail "$name" "exit status $rc, expected 2"; return; fi
  if [ -s "$work/stdout" ]; then fail "$name" "wrote to stdout"; return; fi
  local lines
  lines=$(wc -l <"$work/stderr")
  if [ "$lines" -ne 1 ] || [ "$(tail -c 1 "$work/stderr" | od -An -c | tr -d ' ')" != '\n' ]; then
    fail "$name" "stderr is not exactly one line ($lines newlines)"; return
  fi
  if ! head -c 15 "$work/stderr" | grep -qx 'swiglu: error: '; then
    fail "$name" "stderr does not start with 'swiglu: error: '"; return
  fi
  if ! grep -qF -- "$needle" "$work/stderr"; then
    fail "$name" "stderr does not mention '$needle'"; return
  fi
  if ! cmp -s "$sentinel" "$y"; then fail "$name" "the existing output was modified"; return; fi
  if [ "$(ls -A "$out")" != "y.npy" ]; then
    fail "$name" "files left in the output directory: $(ls -A "$out" | tr '\n' ' ')"; return
  fi
  if [ "$(ls -A "$corpus")" != "$corpus_listing" ]; then
    fail "$name" "files appeared next to the inputs"; return
  fi
  passed=$((passed + 1))
}

expect_success() {
  local name=$1
  shift
  run_cli "$@"
  if [ "$rc" -ne 0 ]; then fail "$name" "exit status $rc, expected 0"; return; fi
  if cmp -s "$sentinel" "$y"; then fail "$name" "no output written"; return; fi
  if [ "$(ls -A "$out")" != "y.npy" ]; then fail "$name" "stray files in the output directory"; return; fi
  passed=$((passed + 1))
}

x=$corpus/valid_x.npy
weights=$corpus/valid_hf_llama.safetensors

# The good half of every run works.
for w in "$corpus"/valid_*.safetensors; do
  expect_success "$(basename "$w")" --weights "$w" --input "$x"
done
for w in "$corpus"/valid_*.json "$corpus"/valid_*.gguf; do
  expect_success "$(basename "$w")" --weights "$w" --input "$x"
done
for i in "$corpus"/valid_*.npy; do
  expect_success "$(basename "$i")" --weights "$weights" --input "$i"
done

n_st=0
for w in "$corpus"/st_*.safetensors; do
  needle=$w
  # A valid checkpoint of another width: the input is what does not fit.
  [ "$(basename "$w")" = st_block_d_disagrees_with_input.safetensors ] && needle="expected d = 5"
  expect_refusal "$(basename "$w")" "$needle" --weights "$w" --input "$x"
  n_st=$((n_st + 1))
done
n_idx=0
for w in "$corpus"/idx_*.json; do
  expect_refusal "$(basename "$w")" "$w" --weights "$w" --input "$x"
  n_idx=$((n_idx + 1))
done
n_gguf=0
for w in "$corpus"/gguf_*.gguf; do
  expect_refusal "$(basename "$w")" "$w" --weights "$w" --input "$x"
  n_gguf=$((n_gguf + 1))
done
n_npy=0
for i in "$corpus"/npy_*.npy; do
  expect_refusal "$(basename "$i")" "$i" --weights "$weights" --input "$i"
  n_npy=$((n_npy + 1))
done

# Paths that are not regular files, and command-line values out of range.
expect_refusal "weights_is_directory" "$corpus" --weights "$corpus" --input "$x"
expect_refusal "weights_is_dev_null" "/dev/null" --weights /dev/null --input "$x"
expect_refusal "input_is_directory" "$corpus" --weights "$weights" --input "$corpus"
expect_refusal "input_is_dev_null" "/dev/null" --weights "$weights" --input /dev/null
expect_refusal "threads_negative" "--threads" --weights "$weights" --input "$x" --threads -1
expect_refusal "threads_absurd" "4096" --weights "$weights" --input "$x" --threads 1000000
expect_refusal "threads_past_int" "--threads" --weights "$weights" --input "$x" --threads 4294967297
expect_refusal "threads_past_i64" "--threads" --weights "$weights" --input "$x" --threads 99999999999999999999
expect_refusal "layer_negative" "--layer" --weights "$weights" --input "$x" --layer -1
expect_refusal "layer_past_i64" "--layer" --weights "$weights" --input "$x" --layer 99999999999999999999
expect_refusal "layer_absent" "$weights" --weights "$weights" --input "$x" --layer 9223372036854775807
expect_refusal "prefix_absent" "$weights" --weights "$weights" --input "$x" --prefix $'no\x01such.'

# Inputs that are streams: checked as they arrive, so an endless one is
# refused at its first bad byte (or one byte past the announced data), not
# buffered until memory runs out. (ulimit -v would catch unbounded growth
# in a run that slipped through; the 60 s timeout a hang.)
expect_refusal "input_dev_zero" "/dev/zero" --weights "$weights" --input /dev/zero
expect_refusal "input_dev_urandom" "/dev/urandom" --weights "$weights" --input /dev/urandom
expect_refusal "input_pipe_endless_after_valid_data" "trailing bytes" \
  --weights "$weights" --input <(cat "$x"; yes 2>/dev/null)
expect_refusal "input_pipe_header_too_long" "exceeds the limit" \
  --weights "$weights" --input <(printf '\x93NUMPY\x02\x00\xff\xff\xff\x7f'; yes 2>/dev/null)
expect_success "input_pipe_valid" --weights "$weights" --input <(cat "$x")

# Outputs that are not plain files: a FIFO or a character device is written
# in place and stays what it was (a rename over /dev/null would replace the
# system's /dev/null when run as root); a symbolic link stays a link and its
# target gets the output; a block device or a dangling link is refused.
check() {  # name, condition...
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else fail "$name" "check failed: $*"; fi
}
special=$work/special
mkdir "$special"
timeout 60 "$cli" run --weights "$weights" --input "$x" --output "$special/reference.npy" 2>"$work/stderr"
check "output_reference" test -s "$special/reference.npy"
mkfifo "$special/fifo"
timeout 60 cat "$special/fifo" >"$special/fifo.out" &
reader=$!
timeout 60 "$cli" run --weights "$weights" --input "$x" --output "$special/fifo" 2>"$work/stderr"
check "output_fifo_status" test $? -eq 0
wait "$reader"
check "output_fifo_still_fifo" test -p "$special/fifo"
check "output_fifo_content" cmp -s "$special/fifo.out" "$special/reference.npy"
printf 'old\n' >"$special/real.npy"
ln -s real.npy "$special/link.npy"
timeout 60 "$cli" run --weights "$weights" --input "$x" --output "$special/link.npy" 2>"$work/stderr"
check "output_symlink_status" test $? -eq 0
check "output_symlink_still_link" test -L "$special/link.npy"
check "output_symlink_target_written" cmp -s "$special/real.npy" "$special/reference.npy"
ln -s missing.npy "$special/dangling.npy"
cp "$sentinel" "$y"
timeout 60 "$cli" run --weights "$weights" --input "$x" --output "$special/dangling.npy" \
  >"$work/stdout" 2>"$work/stderr"
check "output_dangling_symlink_refused" test $? -eq 2
check "output_dangling_symlink_kept" test -L "$special/dangling.npy" -a ! -e "$special/dangling.npy"
# Device nodes need root (and a file system that allows them): skipped otherwise.
if mknod "$special/null" c 1 3 2>/dev/null; then
  timeout 60 "$cli" run --weights "$weights" --input "$x" --output "$special/null" 2>"$work/stderr"
  check "output_char_device_status" test $? -eq 0
  check "output_char_device_still_device" test -c "$special/null"
fi
# Major 240 is reserved for local use: no driver, so nothing could be written
# even if the command tried.
if mknod "$special/disk" b 240 0 2>/dev/null; then
  timeout 60 "$cli" run --weights "$weights" --input "$x" --output "$special/disk" 2>"$work/stderr"
  check "output_block_device_refused" test $? -eq 2
  check "output_block_device_message" grep -q "block device" "$work/stderr"
  check "output_block_device_still_device" test -b "$special/disk"
fi
extra=$(ls -A "$special" | grep -v -x -e reference.npy -e fifo -e fifo.out -e real.npy -e link.npy \
        -e dangling.npy -e null -e disk)
check "output_special_no_stray_files" test -z "$extra"

echo "hostile corpus: $n_st safetensors, $n_idx indexes, $n_gguf GGUF and $n_npy .npy files"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
