#!/usr/bin/env bash
# scripts/install-deps.sh against stand-ins for dpkg-query, apt-get, id and
# sleep (nothing is installed, nothing waits): with every package present it
# runs no apt at all; with one missing it updates once and installs only
# that one, waiting for dpkg's lock (DPkg::Lock::Timeout); while another apt
# holds the package lists' lock it retries update, up to the limit; any
# other error fails at once, with apt's message.
set -euo pipefail
script=${1:?usage: install_deps.sh PATH/TO/install-deps.sh}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/bin
mkdir -p "$bin"

# dpkg-query -W -f='${Status}' P: installed unless P is in $work/missing.
cat >"$bin/dpkg-query" <<'STUB'
#!/usr/bin/env bash
p=${!#}
grep -qx "$p" "$FAKE/missing" 2>/dev/null && exit 1
printf 'install ok installed'
STUB
# apt-get: logs its arguments; `update` fails with the lists' lock message
# while $work/locked counts down (or forever at "always"), or with another
# error where $work/broken exists.
cat >"$bin/apt-get" <<'STUB'
#!/usr/bin/env bash
echo "apt-get $*" >>"$FAKE/log"
if [[ " $* " == *" update "* ]]; then
  if [ -e "$FAKE/broken" ]; then echo "E: The repository is not signed." >&2; exit 100; fi
  n=$(cat "$FAKE/locked" 2>/dev/null || echo 0)
  if [ "$n" = always ] || [ "$n" -gt 0 ]; then
    [ "$n" = always ] || echo $((n - 1)) >"$FAKE/locked"
    echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 42 (apt-get)" >&2
    exit 100
  fi
fi
exit 0
STUB
printf '#!/bin/sh\necho 0\n' >"$bin/id"
printf '#!/bin/sh\necho "sleep $*" >>"$FAKE/log"\n' >"$bin/sleep"
chmod +x "$bin"/*
export FAKE=$work PATH="$bin:$PATH"

fail() { echo "install_deps: $*"; echo "--- apt log:"; cat "$work/log" 2>/dev/null; exit 1; }
reset() { rm -f "$work/log" "$work/missing" "$work/locked" "$work/broken"; }
calls() { cat "$work/log" 2>/dev/null | grep -c '^apt-get' || true; }

# Everything present: no apt at all.
reset
bash "$script" >/dev/null || fail "with every package present it failed"
[ "$(calls)" = 0 ] || fail "with every package present it ran apt-get"

# One missing: one update, one install of that package alone, both waiting
# for dpkg's lock.
reset
echo libxsimd-dev >"$work/missing"
bash "$script" >/dev/null || fail "installing one package failed"
[ "$(calls)" = 2 ] || fail "expected one update and one install"
grep -q "^apt-get -o DPkg::Lock::Timeout=600 update -qq$" "$work/log" || fail "update does not wait for the lock"
grep -q "^apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends libxsimd-dev$" \
  "$work/log" || fail "install: not the one missing package, or no lock wait"

# The lists' lock held for two tries: update is retried, then installs.
reset
echo doctest-dev >"$work/missing"
echo 2 >"$work/locked"
out=$(bash "$script" 2>&1) || fail "did not wait for the lists' lock: $out"
[ "$(grep -c ' update ' "$work/log")" = 3 ] || fail "expected three tries of update"
grep -q "waiting" <<<"$out" || fail "no word that it waits: $out"
grep -q " install " "$work/log" || fail "no install after the lock was freed"

# Held past the limit: fails with apt's message, installs nothing.
reset
echo doctest-dev >"$work/missing"
echo always >"$work/locked"
if out=$(SWIGLU_APT_LOCK_WAIT=20 bash "$script" 2>&1); then fail "a lock held forever passed"; fi
grep -q "Could not get lock" <<<"$out" || fail "no apt message at the limit: $out"
[ "$(grep -c ' update ' "$work/log")" = 5 ] || fail "expected 5 tries in 20 s of 5 s steps"
! grep -q " install " "$work/log" || fail "installed after a failed update"

# Another error: at once, with apt's message.
reset
echo doctest-dev >"$work/missing"
touch "$work/broken"
if out=$(bash "$script" 2>&1); then fail "a failed update passed"; fi
grep -q "not signed" <<<"$out" || fail "apt's message lost: $out"
[ "$(calls)" = 1 ] || fail "retried an error that is no lock"

echo "install-deps: 5 cases passed"
