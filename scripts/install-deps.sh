#!/usr/bin/env bash
# Installs the Debian 12 packages swiglu builds on, plus any named as
# arguments, only those missing. Run as root (or with sudo) on a fresh machine.
set -euo pipefail

packages=(cmake make g++ pkg-config libdnnl-dev libxsimd-dev doctest-dev libbenchmark-dev
          nlohmann-json3-dev libcli11-dev python3 "$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
