#!/usr/bin/env bash
# scripts/built.sh, the end of the README's set-up commands: it names the
# command where the build put it, and with SWIGLU_INSTALL_PREFIX installs
# there and names the installed command, which runs.
set -euo pipefail
repo=${1:?usage: built.sh REPO BUILD}
build=${2:?usage: built.sh REPO BUILD}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$(cd "$repo" && bash scripts/built.sh "$build")
echo "$out"
grep -q "^  $build/src/cli/swiglu  *the command" <<<"$out" || { echo "built.sh: the command not named"; exit 1; }
grep -q "cmake --install" <<<"$out" || { echo "built.sh: no word on installing"; exit 1; }
out=$(cd "$repo" && SWIGLU_INSTALL_PREFIX="$work/prefix" bash scripts/built.sh "$build")
grep -q "^  $work/prefix/bin/swiglu  *the command" <<<"$out" || { echo "built.sh: installed command not named: $out"; exit 1; }
"$work/prefix/bin/swiglu" --version
