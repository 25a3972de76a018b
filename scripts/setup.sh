#!/usr/bin/env bash
# Installs everything qvl needs (Debian packages, npm test tools) and builds it.
# Non-interactive and idempotent: safe to run again. Usage: scripts/setup.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang-format
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libmicrohttpd-dev libssl-dev libcurl4-openssl-dev
  libpcre2-dev libutf8proc-dev libhwy-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev
  # documents (docs/documents.md): PDF rendering and multi-page TIFF, poppler-data's CMaps for
  # CJK PDFs without embedded fonts; the tests' oracle and encrypted fixtures come from
  # poppler-utils (pdftoppm) and qpdf
  libpoppler-cpp-dev poppler-data libtiff-dev poppler-utils qpdf
  # video (docs/video.md): FFmpeg's libraries (animated WebP uses libwebp-dev's libwebpdemux);
  # the ffmpeg program only encodes the tests' clips
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev ffmpeg
  clang libclang-rt-14-dev chromium
  curl systemd nginx podman runc debootstrap uidmap slirp4netns fuse-overlayfs
)

# Node.js (for the test tools) may come from Debian or from NodeSource (which bundles npm and
# conflicts with Debian's npm package): only install it when it is absent.
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(nodejs npm)
# kubectl (deploy tests render deploy/k8s): Debian's unless one is already installed.
command -v kubectl >/dev/null 2>&1 || APT_PACKAGES+=(kubernetes-client)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # Packages such as nginx start a system service on install (nginx would take port 80):
  # a temporary policy-rc.d forbids that, unless the machine already has its own policy.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    trap '$SUDO rm -f "$policy"' EXIT
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if [ "$(trap -p EXIT)" ]; then $SUDO rm -f "$policy" && trap - EXIT; fi
  # Nor at the next boot: the tests run their own nginx.
  if [[ " ${missing[*]} " == *" nginx "* ]] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --quiet nginx || true
  fi
fi

# npm tools used by the tests (reference tokenizer, OpenAI SDK client); pinned by the lockfile.
if [ -f package-lock.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
  fi
fi

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${QVL_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
