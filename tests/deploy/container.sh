#!/usr/bin/env bash
# Container test: builds deploy/Dockerfile's `prebuilt` target (the runtime stage with the qvl
# binary of this build copied in) with podman on a Debian base made by debootstrap (no registry
# needed; the tarball is cached in the build folder), runs it with the tiny model mounted, and
# checks /health, the HEALTHCHECK, a chat request and a clean stop. The full multi-stage build
# (compiling qvl inside the image) is not run here: it takes many minutes.
# The image is built for the binary's architecture: an aarch64 qvl (build-aarch64/qvl, from
# scripts/test_cross.sh) gives the linux/arm64 image, run through qemu-user-static registered with
# binfmt_misc's F flag (Debian's qemu-user-static entry, as test_cross.sh registers it), so
# that the kernel finds the emulator inside the container too; its base is an arm64 debootstrap.
# Usage: container.sh QVL_BINARY TESTDATA_DIR WORK_DIR. Exit 77 = skipped (reason printed).
set -euo pipefail
qvl_bin=$1 testdata=$2 work=$3
repo=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

command -v podman >/dev/null || skip "podman is not installed (scripts/setup.sh installs it)"
podman info >/dev/null 2>&1 || skip "podman cannot run here: $(podman info 2>&1 | tail -1)"
mkdir -p "$work"

# The binary's architecture (ELF e_machine, bytes 18-19): the image's platform.
case "$(od -An -tx1 -j18 -N2 "$qvl_bin" | tr -d ' \n')" in
  3e00) arch=amd64 ;;
  b700) arch=arm64 ;;
  *) skip "no container test for the architecture of $qvl_bin" ;;
esac
host_arch=$(dpkg --print-architecture)
tag=bookworm-slim
tarball=$work/debian-bookworm-slim.tar
if [ "$arch" != "$host_arch" ]; then
  tag=bookworm-slim-$arch
  tarball=$work/debian-bookworm-slim-$arch.tar
  emulator=""
  for entry in /proc/sys/fs/binfmt_misc/qemu-aarch64*; do
    [ -e "$entry" ] && grep -q '^enabled' "$entry" && grep -q '^flags:.*F' "$entry" && emulator=$entry
  done
  [ -n "$emulator" ] || skip "no qemu-aarch64 binfmt_misc entry with the F flag (scripts/test_cross.sh registers Debian's qemu-user-static one)"
fi
base=localhost/qvl-debian:$tag
command -v debootstrap >/dev/null || skip "debootstrap is not installed (scripts/setup.sh installs it)"
[ "$(id -u)" = 0 ] || [ -s "$tarball" ] || skip "debootstrap needs root to make the base image"
t=$(now)
if ! "$repo/deploy/container/make-base.sh" "$tarball" "$base" "$arch" >"$work/base.log" 2>&1; then
  tail -5 "$work/base.log"
  skip "could not debootstrap a Debian base from the archive (no network?)"
fi
echo "$arch base image ready in $(elapsed "$t") s ($(du -h "$tarball" | cut -f1) tarball)"

# Raising rlimits needs CAP_SYS_RESOURCE, which some VMs and CI sandboxes withhold: ask only
# for what this process already has. crun refuses hybrid cgroup v1/v2 hosts; runc copes.
hard_nofile=$(ulimit -Hn)
[ "$hard_nofile" = unlimited ] && hard_nofile=65536
run_opts=(--ulimit "nofile=$hard_nofile:$hard_nofile" --ulimit nproc=4096:4096)
probe_log=$work/probe.log
run_opts+=(--platform "linux/$arch")
if ! podman run --rm "${run_opts[@]}" "$base" true >"$probe_log" 2>&1; then
  if command -v runc >/dev/null && podman run --rm --runtime runc "${run_opts[@]}" "$base" true >"$probe_log" 2>&1; then
    run_opts=(--runtime runc "${run_opts[@]}")
  else
    skip "containers cannot run on this machine: $(tail -1 "$probe_log")"
  fi
fi

# A small build context: the entry point and the binary, not the whole repository.
ctx=$work/context
rm -rf "$ctx" && mkdir -p "$ctx/deploy/container"
cp "$repo/deploy/container/entrypoint.sh" "$ctx/deploy/container/"
cp "$qvl_bin" "$ctx/qvl"
image=localhost/qvl:deploy-test-$arch
t=$(now)
podman build "${run_opts[@]}" --format docker -f "$repo/deploy/Dockerfile" --target prebuilt \
  --build-arg BASE_IMAGE="$base" --build-arg QVL_PREBUILT=qvl -t "$image" "$ctx" >"$work/build.log" 2>&1 ||
  { tail -20 "$work/build.log"; echo "FAIL: podman build"; exit 1; }
size=$(podman image inspect "$image" --format '{{.Size}}')
echo "image built in $(elapsed "$t") s, size $((size / 1000000)) MB"
[ "$(podman image inspect "$image" --format '{{.Architecture}}')" = "$arch" ] ||
  { echo "FAIL: the image is not linux/$arch"; exit 1; }
[ "$(podman image inspect "$image" --format '{{.Config.User}}')" = qvl ] || { echo "FAIL: image does not run as user qvl"; exit 1; }
podman image inspect "$image" --format '{{json .Config.Healthcheck}}' | grep -q /health ||
  { echo "FAIL: no HEALTHCHECK on /health"; exit 1; }

name=qvl-deploy-test-$$
trap 'podman rm -f "$name" >/dev/null 2>&1 || true' EXIT
t=$(now)
# --health-interval=disable: no systemd timers here; the check is run by hand below.
podman run -d --name "$name" "${run_opts[@]}" --health-interval=disable -p 127.0.0.1::8080 \
  -v "$testdata:/models:ro" -e QVL_MODEL=/models/qwen3vl-tiny-a -e QVL_THREADS=1 -e QVL_SHUTDOWN_GRACE=10 \
  "$image" --alias tiny >/dev/null 2>"$work/run.log" || { cat "$work/run.log"; echo "FAIL: podman run"; exit 1; }
port=$(podman port "$name" 8080 | head -1 | sed 's/.*://')
url=http://127.0.0.1:$port
for _ in $(seq 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ] && break
  [ "$(podman inspect "$name" --format '{{.State.Running}}')" = true ] || break
  sleep 0.1
done
[ "$(curl -s "$url/health")" = '{"status":"ok"}' ] || { podman logs "$name" | tail; echo "FAIL: /health"; exit 1; }
echo "container ready in $(elapsed "$t") s on $url"
podman healthcheck run "$name" >/dev/null 2>&1 || { echo "FAIL: HEALTHCHECK"; exit 1; }

answer=$(curl -s --max-time 60 "$url/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"tiny","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4}')
echo "$answer" | grep -q '"finish_reason":"length"' || { echo "FAIL: chat: $answer"; exit 1; }
echo "$answer" | grep -q '"model":"tiny"' || { echo "FAIL: arguments did not reach qvl: $answer"; exit 1; }

t=$(now)
podman stop -t 30 "$name" >/dev/null 2>&1
stop_s=$(elapsed "$t")
code=$(podman inspect "$name" --format '{{.State.ExitCode}}')
podman logs "$name" 2>&1 | grep -q 'stopped' || { echo "FAIL: qvl did not shut down by itself"; exit 1; }
[ "$code" = 0 ] || { echo "FAIL: exit code $code after SIGTERM"; exit 1; }
awk -v s="$stop_s" 'BEGIN { exit !(s < 10) }' || { echo "FAIL: stop took $stop_s s"; exit 1; }
echo "stopped cleanly (exit 0) in $stop_s s"
echo PASS
