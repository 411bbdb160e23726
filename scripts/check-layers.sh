#!/usr/bin/env bash
# Checks that includes inside src/ only point down the layers (docs/design.md,
# "Layout"): a file of a layer may include its own layer and those listed
# for it below, nothing above. Prints each violation; exit 1 if any.
set -euo pipefail
cd "$(dirname "$0")/../src"
declare -A allowed=(
  [common]="common"
  [kernels]="kernels common"
  [formats]="formats kernels common"
  [onednn]="onednn common"
  [core]="core formats kernels onednn common"
  [io]="io core formats kernels onednn common"
  [capi]="capi io core formats kernels onednn common"
  [mpi]="mpi"
  [cli]="cli mpi capi io core formats kernels onednn common"
)
bad=0
for layer in "${!allowed[@]}"; do
  [ -d "$layer" ] || continue
  while IFS=: read -r file _ line; do
    target=$(sed -n 's/^#include "\([a-z_]*\)\/.*/\1/p' <<<"$line")
    [ -n "$target" ] || continue
    if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
      echo "src/$file: $layer includes $target (above it): $line"
      bad=1
    fi
  done < <(grep -rn '^#include "' "$layer" || true)
done
[ "$bad" -eq 0 ] && echo "layers: every include in src/ points down"
exit "$bad"
