#!/usr/bin/env bash
# Makes a Debian bookworm base image without any container registry: debootstrap (minbase) from
# Debian's archive, trimmed like debian:bookworm-slim, saved as a tarball and imported into
# podman under the given name. The tarball is cached: later runs only import it.
# Usage: deploy/container/make-base.sh TARBALL [IMAGE_NAME] [ARCH]
#   ARCH: a Debian architecture (default: the host's), e.g. arm64 on an x86-64 host: debootstrap's
#   second stage then runs the arm64 binaries through qemu, which needs qemu-user-static
#   registered with binfmt_misc (the F flag, so that it also works inside chroots and containers).
#   DEBIAN_MIRROR (default http://deb.debian.org/debian) chooses the archive.
set -euo pipefail
tarball=${1:?usage: make-base.sh TARBALL [IMAGE_NAME]}
image=${2:-localhost/qvl-debian:bookworm-slim}
arch=${3:-$(dpkg --print-architecture)}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ ! -s "$tarball" ]; then
  root=$(mktemp -d "${tarball}.root.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  debootstrap --arch="$arch" --variant=minbase --components=main bookworm "$root" "$mirror" >&2
  # What the official slim image drops: docs, man pages, translations, apt lists and caches.
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
    "$root"/usr/share/locale/* "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
    "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log
  # apt inside containers: no service starts, security updates reachable.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main
SOURCES
  tar --numeric-owner -C "$root" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
fi

if ! podman image exists "$image"; then
  podman import --arch "$arch" --change 'CMD ["bash"]' "$tarball" "$image" >/dev/null
fi
echo "$image"
