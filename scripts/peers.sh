#!/usr/bin/env bash
# The README's peer table, reproduced: our block against llama.cpp's ggml and
# against PyTorch, each peer in one process with ours, same weights, calls in
# alternating batches, outputs compared (bench/peers/README.md, "The
# headline table").
#
#   scripts/peers.sh GGML_DIR [--quick]
#
# GGML_DIR: a checkout of https://github.com/ggml-org/ggml (nothing is
# downloaded). Installs what is missing (python3-torch, python3-numpy,
# libopenblas0-pthread and our build's packages: scripts/install-deps.sh),
# builds our tree with ggml and the Python module (bench/peers/run_ggml.sh),
# runs the ggml peer (f32, bf16, q8_0, q4_0) and the torch peer
# (bench/peers/torch_peer.py: f32, bf16) on cyber and llama7b at 1 and 512
# tokens, 2 threads, and prints the machine, both commits, torch's and
# OpenBLAS's versions and one markdown table: "ours ms vs peer ms: ratio".
# --quick: cyber only (~2 min after the build; the full run ~10 min).
# The torch peer runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset
# (printed when they were set): OpenBLAS picks its own kernels for the CPU.
# Environment: BUILD_DIR (default build), JOBS (default 2), PYTHON (default
# /usr/bin/python3: Debian's torch), THREADS (default 2). Builds hold
# `flock -s /tmp/cpu.lock`, the timings `flock -x /tmp/cpu.lock`.
# Exit status 1 when a row's outputs disagree (MISMATCH in the table).
set -euo pipefail

usage() {
    echo "usage: $0 GGML_DIR [--quick]" >&2
    echo "  GGML_DIR: a checkout of https://github.com/ggml-org/ggml" >&2
    exit 2
}
[[ $# -ge 1 && -f "$1/include/ggml.h" ]] || usage
ggml_dir=$(cd "$1" && pwd)
shift
shapes=cyber,llama7b
for a in "$@"; do
    case "$a" in
        --quick) shapes=cyber ;;
        *) usage ;;
    esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
py=${PYTHON:-/usr/bin/python3}
threads=${THREADS:-2}
lock=/tmp/cpu.lock

# Debian's torch runs float32 F.linear on whatever libblas.so.3 points to;
# libopenblas0-pthread takes that alternative (priority 100 over the
# reference BLAS's 10) when it is installed.
bash "$root/scripts/install-deps.sh" python3-torch python3-numpy libopenblas0-pthread

out="$build/peers-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"
echo "building, then the ggml peer (full tables: $out/)" >&2
ggml_status=0
EXTRA_TARGETS=_swiglu BUILD_DIR="$build" "$root/bench/peers/run_ggml.sh" "$ggml_dir" \
    --shapes "$shapes" --dtypes f32,bf16,q8_0,q4_0 --tokens 1,512 --threads "$threads" \
    --tsv "$out/ggml.tsv" > "$out/ggml.md" 2> "$out/ggml.err" || ggml_status=$?
if [[ ! -s "$out/ggml.tsv" ]]; then
    cat "$out/ggml.md" "$out/ggml.err" >&2
    exit 1
fi
echo "the torch peer" >&2
# OpenBLAS as a user's machine runs it: OPENBLAS_CORETYPE (a machine may set
# it, e.g. to Haswell) would choose its kernels instead of its own detection
# (Cooperlake's AVX-512 ones on Zen 4/5), OPENBLAS_L2_SIZE its blocking.
openblas_env=$(env | grep -E '^OPENBLAS_(CORETYPE|L2_SIZE)=' | tr '\n' ' ' || true)
torch_status=0
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
    PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" flock -x "$lock" "$py" \
    "$root/bench/peers/torch_peer.py" --shapes "$shapes" --dtypes f32,bf16 --tokens 1,512 \
    --threads "$threads" --tsv "$out/torch.tsv" > "$out/torch.md" 2> "$out/torch.err" ||
    torch_status=$?
if [[ ! -s "$out/torch.tsv" ]]; then
    cat "$out/torch.md" "$out/torch.err" >&2
    exit 1
fi

ours=$(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)
if [[ -n $(git -C "$root" status --porcelain --untracked-files=no 2> /dev/null) ]]; then
    ours="$ours (modified)"
fi
echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC')"
# lscpu's name alone ("AMD EPYC" in a VM) hides the generation: family,
# model and the ISA extensions the kernels choose between.
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
    grep -x -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_tile' | tr '\n' ' ' || true)
echo "machine:  $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs (family" \
    "$(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p'); ${isa% })"
echo "swiglu:   $ours"
echo "ggml:     $(git -C "$ggml_dir" rev-parse HEAD 2> /dev/null || echo unknown) ($ggml_dir)"
sed -n 's/^ggml: \(.*\) (commit.*/ggml ver: \1/p' "$out/ggml.md"
sed -n 's/^torch: /torch:    /p; s/^OpenBLAS: /OpenBLAS: /p; s/^libblas.so.3 alternative: /libblas:  /p' \
    "$out/torch.md"
if [[ -n $openblas_env ]]; then echo "unset for the torch peer: ${openblas_env% }"; fi
echo "command:  scripts/peers.sh GGML_DIR $*  ($threads threads; ratio = peer ms / ours per round,"
echo "          median; > 1: ours faster)"
echo
"$py" "$root/bench/peers/headline.py" --ggml "$out/ggml.tsv" --torch "$out/torch.tsv" \
    --threads "$threads"
echo
echo "every column of both peers: $out/ggml.md, $out/torch.md"
if ((ggml_status || torch_status)); then
    echo "a peer exited with status $ggml_status (ggml) / $torch_status (torch): see those files" >&2
    exit 1
fi
