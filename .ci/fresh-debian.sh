#!/usr/bin/env bash
# Runs a command in a fresh, minimal Debian 12 (bookworm) system, as a new
# user's machine starts: a debootstrap minbase chroot holding nothing but the
# base system and a copy of this repository's committed tree (git archive
# HEAD), as root, with only Debian's package registry reachable.
#
#   bash .ci/fresh-debian.sh 'bash scripts/test.sh'
#
# The base system (debootstrap's output, no package of ours) is made once and
# cached as a tarball under $SWIGLU_FRESH_CACHE (default
# /var/cache/swiglu-fresh-debian); every run unpacks it anew, so whatever the
# command installs is gone afterwards and the next run downloads it again.
# Needs root. Exit status: the command's. Uncommitted files are not copied.
set -euo pipefail
cmd=${1:?usage: .ci/fresh-debian.sh 'COMMAND'}
[ "$(id -u)" -eq 0 ] || { echo "fresh-debian: needs root (chroot, mount)" >&2; exit 2; }
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
cache=${SWIGLU_FRESH_CACHE:-/var/cache/swiglu-fresh-debian}
base=$cache/bookworm-minbase.tar.gz
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
mirror=${mirror:-http://deb.debian.org/debian}
root=$(mktemp -d /tmp/swiglu-fresh.XXXXXX)

# Every exit path (success, failure, Ctrl-C, kill) unmounts before removing:
# rm must never walk into the host's /dev, /sys or /proc. --one-file-system
# is the second guard; a mount that will not go away leaves the tree behind.
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for m in dev sys proc; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -R -l "$root/$m" 2>/dev/null || true
  done
  if grep -q " $root/" /proc/mounts; then
    echo "fresh-debian: mounts remain under $root; not removing it" >&2
  else
    rm -rf --one-file-system "$root"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ ! -s $base ]]; then
  command -v debootstrap >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  mkdir -p "$cache"
  echo "fresh-debian: making the bookworm minbase system once (cached in $cache)" >&2
  debootstrap --variant=minbase bookworm "$root/base" "$mirror" >"$cache/debootstrap.log" 2>&1 \
    || { tail -n 5 "$cache/debootstrap.log" >&2; exit 1; }
  tar -C "$root/base" -czf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf --one-file-system "$root/base"
fi

tar -C "$root" -xzf "$base"
# The same registry the host uses (a mirror or a snapshot; its Acquire
# settings, e.g. Check-Valid-Until for a snapshot), and nothing else.
cp /etc/resolv.conf "$root/etc/" 2>/dev/null || true
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  rm -f "$root/etc/apt/sources.list"
fi
for conf in /etc/apt/apt.conf.d/*; do
  grep -Eqs 'Acquire::(Check-Valid-Until|Check-Date|[a-z]+::Proxy)' "$conf" && cp "$conf" "$root/etc/apt/apt.conf.d/"
done

mkdir -p "$root/root/project"
git -C "$repo" archive HEAD | tar -x -C "$root/root/project"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
echo "fresh-debian: $(git -C "$repo" rev-parse --short HEAD) in a new bookworm minbase: $cmd" >&2
# A clean environment: nothing of the host's (or CI's) variables leaks in.
chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c "cd /root/project && $cmd"
