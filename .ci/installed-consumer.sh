#!/usr/bin/env bash
# Installs ./build system-wide (cmake --install, default prefix /usr/local)
# and builds the two consumers of test/package against it as a user would:
# no CMAKE_PREFIX_PATH, no PKG_CONFIG_PATH, no LD_LIBRARY_PATH. Meant for the
# fresh Debian 12 stage of .ci/run (it writes to /usr/local).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install build >/dev/null
ldconfig

cc -std=c99 -Wall -Werror test/package/consumer.c -o "$work/consumer_c" $(pkg-config --cflags --libs swiglu)
"$work/consumer_c"

cmake -S test/package -B "$work/cpp" >/dev/null
cmake --build "$work/cpp" -j"$(nproc)" >/dev/null
"$work/cpp/consumer"
echo "installed-package consumers: 2 passed, 0 failed"
