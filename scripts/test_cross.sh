#!/usr/bin/env bash
# Cross-builds qvl for non-x86 Linux and runs its tests under qemu-user: aarch64 (Debian's
# aarch64-linux-gnu-g++ and :arm64 multiarch packages; one ctest run per emulated CPU model) and
# ppc64le (the scalar-only target: powerpc64le-linux-gnu-g++ and a Debian ppc64el sysroot; one
# run). Installs what is missing first (idempotent, like scripts/setup.sh; run that first for the
# npm packages the configure step needs).
#
# Usage: scripts/test_cross.sh [aarch64] [ppc64le]      (default: both)
# Environment:
#   QVL_CROSS_TARGETS     build targets (default: all); e.g. "test_base test_tokenizer" to build
#                         and test only those (tests of executables not built are left out)
#   QVL_CROSS_CMAKE_ARGS  extra cmake arguments, e.g. -DQVL_TESTS_LINK_MODEL=OFF
#   QVL_CROSS_CPUS        aarch64 CPU models to test (default: cortex-a76 max neoverse-n1 a64fx)
#   QVL_CROSS_CTEST_ARGS  ctest selection for every CPU model instead of the table below
#   QVL_CROSS_JOBS        build and ctest parallelism (default: nproc)
#   QVL_CROSS_BINFMT=0    do not register qemu with binfmt_misc (see below)
# Build directories: build-aarch64, build-ppc64le. Extra arguments after "--" go to every ctest.
#
# Tests whose executable is a test binary run through the toolchain's CMAKE_CROSSCOMPILING_EMULATOR
# (scripts/qemu-run). Tests that start qvl from a shell or node script (labels cli, parity's
# golden_folder check, server, web) need the kernel to run foreign binaries itself: when
# binfmt_misc is usable (root), qemu is registered for the target there and QEMU_CPU /
# QEMU_LD_PREFIX carry the CPU model and the guest root to those processes too; otherwise those
# tests are left out and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

arches=()
ctest_extra=()
while (($#)); do
  case "$1" in
    --) shift; ctest_extra=("$@"); break ;;
    aarch64 | ppc64le) arches+=("$1"); shift ;;
    *) echo "test_cross: unknown target $1 (aarch64, ppc64le)" >&2; exit 2 ;;
  esac
done
((${#arches[@]})) || arches=(aarch64 ppc64le)
JOBS=${QVL_CROSS_JOBS:-$(nproc)}
read -r -a cpus <<<"${QVL_CROSS_CPUS:-cortex-a76 max neoverse-n1 a64fx}"
read -r -a targets <<<"${QVL_CROSS_TARGETS:-}"
read -r -a cmake_extra <<<"${QVL_CROSS_CMAKE_ARGS:-}"

# What each emulated aarch64 CPU model runs (ctest arguments), chosen so that every kernel level
# is covered and the whole stays within the suite's time:
# - cortex-a76 (dotprod, no i8mm: the Raspberry Pi 5): every ops, tokenizer, image and model unit
#   test (the scalar, neon and dotprod levels; attention only at scalar and neon: dotprod has the
#   neon attention kernels) and the parity tests that cover each model path (exact prefill and
#   decode, the engine's greedy tokens with images, teacher-forced logits, bf16 greedy tokens,
#   q8/q4 quality against exact);
# - max (i8mm, bf16, SVE2): the i8mm level: the int8 GEMM, BFMMLA, batch invariance and dispatch
#   tests, and the golden greedy tokens with bf16 weights (bf16 weights and the default bf16 vision
#   tower run BFMMLA there; attention has no i8mm kernel, and the i8mm int8 tiles give the dotprod
#   tiles' bits, tested in ops, so the q8/q4 answers are those checked under cortex-a76);
# - a64fx (512-bit SVE without dot product): the plain NEON level as the best one (dispatch, the
#   SMULL int8 tile and batch invariance at it; cortex-a76 already runs every neon-level kernel
#   test, so not the wide matmul checks again);
# - neoverse-n1 (Graviton2): the start-up self-check of its level.
# With binfmt_misc (see above), cortex-a76 and max also run qvl itself: under cortex-a76
# `qvl run --json` against the goldens and `qvl serve` (an image chat, streams batched and one
# cancelled, cache reuse); under max `qvl --isa` at every ARM level (probe figures, kernel names,
# the same greedy answer at each) and `qvl serve` driven by the official OpenAI SDK.
ctest_args_for_cpu() {
  if [ -n "${QVL_CROSS_CTEST_ARGS:-}" ]; then echo "$QVL_CROSS_CTEST_ARGS"; return; fi
  case "$1" in
    cortex-a76) echo "-L unit|parity -R ^((ops|tokenizer|image|model)\.|parity\.(EngineParity\.PromptIds|TextParity\.|ScoreParity\.|Bf16Greedy\.|Golden/QuantAgreement\..*/(q8|q4)))" ;;
    max) echo "-L unit|parity -R ^(ops\.(.*Int8Gemm.*|PackedGemmBfmmla\..*|Tiles/.*|EveryIsa/BatchInvarianceAtLevel\..*|PackedMatmul\..*|PackedGemv\..*|MachineProbe.*)|parity\.Bf16Greedy\.)" ;;
    a64fx) echo "-L unit -R ^ops\.(PackedMatmul\.(EveryIsa|Rejects|BatchRows|View).*|ElementwiseNeon\..*|EveryIsa/BatchInvarianceAtLevel\..*|MachineProbe.*|Int8GemmDispatch\..*)" ;;
    *) echo "-L unit -R ^ops\.PackedMatmul\.EveryIsaOfTheCpuPassesTheSelfCheck$" ;;
  esac
}
# qvl's own smoke tests per CPU model (labels cli, server; need binfmt_misc and a built qvl).
smoke_args_for_cpu() {
  case "$1" in
    cortex-a76) echo "-R ^(cli\.run_json_matches_golden|server\.serving)$" ;;
    max) echo "-R ^(cli\.isa_option|server\.openai_sdk)$" ;;
  esac
}
# Tests that cannot pass under qemu-user whatever the target: qemu ignores madvise (so
# MADV_POPULATE_READ maps nothing in) and /proc/self/status is the emulator's.
QEMU_LIMITS='^base\.MappedFile\.PopulatePagesMapsTheRangeIn$|^parity\.golden_folder_is_read_at_run_time$'
# Tests too slow under qemu for the suite's time, with what covers them on ARM: the 300-row
# chunked prefill in 4 weight types x 15 chunkings (11 min under qemu; the kernels' batch
# invariance is tested at every level in ops.EveryIsa/BatchInvarianceAtLevel) and the vision
# tower's peak-memory accounting (6 min; it measures the allocator, not the architecture).
QEMU_SLOW='^model\.ChunkedPrefill\.AnyChunkingOfSixteenRowsOrMoreGivesIdenticalResults$|^model\.VisionMemory\.'
# The scalar-only target's slowest tests (1-4 min each under qemu-ppc64le): large shapes through
# the scalar oracles, which the x86-64 and aarch64 runs already check (the same C++); the rest of
# the ops tests and qvl's smoke tests run.
PPC64LE_SLOW='^ops\.(Attention\.(MatchesReferenceAtEveryIsaLevel|Bf16ProductsStayCloseAtEveryIsaLevel)$|EveryIsa/(PagedAttention|DecodeAttention)\.|PackedGemv\.RunKernelRowsDoNotDependOnTheRunShapeAtEveryLevel$|PackedMatmul\.(MatchesReferenceForEveryTypeIsaAndShape|BlockedGemmHandlesEveryTail)$)'
# Tests a CPU model leaves out because another level runs the same kernels (see above).
exclude_for_cpu() {
  case "$1" in
    cortex-a76) echo '|^ops\.(EveryIsa/(PagedAttention|DecodeAttention)|NeonLevels/AttentionNeonDispatch)\..*/dotprod( |$)' ;;
  esac
}

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
APT_UPDATED=0
apt_install() {  # apt_install PKG... : installs those not installed yet
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "test_cross: installing ${missing[*]}"
  if ((!APT_UPDATED)); then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    APT_UPDATED=1
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The target libraries of scripts/setup.sh's APT_PACKAGES (header-only and arch-independent ones,
# nlohmann-json3-dev and libcli11-dev, serve every architecture). No libbenchmark: QVL_BUILD_BENCH=OFF.
TARGET_LIBS=(libgtest-dev libgmock-dev libmicrohttpd-dev libssl-dev libcurl4-openssl-dev libpcre2-dev
             libutf8proc-dev libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libcpp-httplib-dev)
# Documents (PDF, TIFF): aarch64 builds them; the scalar-only ppc64le target builds with
# -DQVL_DOCUMENTS=OFF (poppler would pull dozens of packages into its sysroot).
DOCUMENT_LIBS=(libpoppler-cpp-dev libtiff-dev)
# Video (FFmpeg's libraries): aarch64 builds it (ARM users need video too); ppc64le builds with
# -DQVL_VIDEO=OFF (FFmpeg's -dev packages would add 168 packages to its 95-package sysroot).
VIDEO_LIBS=(libavformat-dev libavcodec-dev libswscale-dev libavutil-dev)

install_aarch64() {
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    APT_UPDATED=0
  fi
  # :arm64 -dev packages are Multi-Arch: same: apt upgrades the host's amd64 copies of the
  # libraries they share to the same version when needed.
  apt_install crossbuild-essential-arm64 qemu-user qemu-user-static "${TARGET_LIBS[@]/%/:arm64}" \
    "${DOCUMENT_LIBS[@]/%/:arm64}" "${VIDEO_LIBS[@]/%/:arm64}" \
    nlohmann-json3-dev libcli11-dev
}

# ppc64el comes from a sysroot rather than multiarch packages (see
# cmake/toolchains/powerpc64le-linux-gnu.cmake): debootstrap downloads bookworm's ppc64el
# packages with their dependencies; they are only unpacked (nothing runs: no root, no qemu).
PPC64EL_SYSROOT=${QVL_CROSS_SYSROOT:-/var/cache/qvl-cross/ppc64el-bookworm}
PPC64EL_SYSROOT_PACKAGES=("${TARGET_LIBS[@]}" libstdc++-12-dev nlohmann-json3-dev libcli11-dev)
# The Debian mirror this machine's apt uses (its first main-archive URI).
apt_mirror() {
  local uri
  uri=$( (grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security
          grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}') |
        head -1)
  [ -n "$uri" ] || { echo "test_cross: no Debian mirror in the apt sources" >&2; return 1; }
  echo "$uri"
}
install_ppc64le() {
  apt_install crossbuild-essential-ppc64el qemu-user qemu-user-static debootstrap
  local want stamp="$PPC64EL_SYSROOT/.qvl-sysroot"
  want="bookworm ppc64el ${PPC64EL_SYSROOT_PACKAGES[*]}"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  echo "test_cross: making the ppc64el sysroot $PPC64EL_SYSROOT (debootstrap, about 2 min)"
  local tmp="$PPC64EL_SYSROOT.tmp" include
  include=$(IFS=,; echo "${PPC64EL_SYSROOT_PACKAGES[*]}")
  $SUDO rm -rf "$tmp" "$PPC64EL_SYSROOT"
  $SUDO mkdir -p "$(dirname "$PPC64EL_SYSROOT")"
  $SUDO debootstrap --variant=minbase --arch=ppc64el --foreign --include="$include" \
    bookworm "$tmp" "$(apt_mirror)" >/dev/null
  # --foreign unpacks only the base system; unpack the rest (what stage 2 would install).
  local deb
  for deb in "$tmp"/var/cache/apt/archives/*.deb; do $SUDO dpkg-deb -x "$deb" "$tmp"; done
  $SUDO rm -f "$tmp"/var/cache/apt/archives/*.deb
  $SUDO mv "$tmp" "$PPC64EL_SYSROOT"
  # Absolute symlinks (libz.so -> /lib/...) must point into the sysroot.
  local link target
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    $SUDO ln -sfn "$PPC64EL_SYSROOT$target" "$link"
  done < <(find "$PPC64EL_SYSROOT" -type l -lname '/*' ! -lname "$PPC64EL_SYSROOT/*" -print0)
  echo "$want" | $SUDO tee "$stamp" >/dev/null
}

# binfmt_misc: registers qemu for ARCH's ELF executables unless an entry with the F flag already
# serves them. Debian's qemu-user-static entry (its /usr/lib/binfmt.d file: flags P, O, F) comes
# first: with F the kernel opens the emulator when it is registered, so ARCH programs also run
# inside chroots and containers (debootstrap of an arm64 base, the arm64 image's test in .ci/run);
# an entry without F (qemu-user's dynamic qemu-ARCH, registered by earlier runs) gives way to it.
# Without qemu-user-static, qemu-ARCH without flags serves programs started on the host. Returns 1
# when binfmt_misc is not usable.
declare -A ELF_MAGIC=(
  [aarch64]='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
  [ppc64le]='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x15\x00')
declare -A ELF_MASK=(
  [aarch64]='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
  [ppc64le]='\xff\xff\xff\xff\xff\xff\xff\xfc\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\x00')
setup_binfmt() {
  local arch=$1 dir=/proc/sys/fs/binfmt_misc
  [ "${QVL_CROSS_BINFMT:-1}" != 0 ] || return 1
  if [ ! -e "$dir/status" ]; then
    $SUDO mount -t binfmt_misc binfmt_misc "$dir" 2>/dev/null || return 1
  fi
  [ "$(cat "$dir/status" 2>/dev/null)" = enabled ] || return 1
  local name static_conf=/usr/lib/binfmt.d/qemu-$arch.conf
  for name in "qemu-$arch" "qemu-$arch-static"; do
    [ -e "$dir/$name" ] && grep -q '^enabled' "$dir/$name" || continue
    grep -q '^flags:.*F' "$dir/$name" && return 0
    [ -f "$static_conf" ] || return 0
    echo -1 | $SUDO tee "$dir/$name" >/dev/null
  done
  if [ -f "$static_conf" ]; then
    grep -v '^#' "$static_conf" | head -1 | $SUDO tee "$dir/register" >/dev/null 2>&1 &&
      [ -e "$dir/qemu-$arch" ] && return 0
  fi
  local qemu
  qemu=$(command -v "qemu-$arch") || return 1
  printf ':qemu-%s:M::%s:%s:%s:\n' "$arch" "${ELF_MAGIC[$arch]}" "${ELF_MASK[$arch]}" "$qemu" |
    $SUDO tee "$dir/register" >/dev/null 2>&1 || return 1
  [ -e "$dir/qemu-$arch" ]
}

declare -a SUMMARY=()
FAILED=0
now() { date +%s; }

configure_and_build() {  # configure_and_build ARCH TOOLCHAIN
  local arch=$1 build="build-$1" start
  start=$(now)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchains/$2" -DQVL_BUILD_BENCH=OFF "${cmake_extra[@]}" >/dev/null
  if ((${#targets[@]})); then
    cmake --build "$build" --parallel "$JOBS" --target "${targets[@]}"
  else
    cmake --build "$build" --parallel "$JOBS"
  fi
  SUMMARY+=("$arch build: $(($(now) - start)) s")
}

# run_ctest ARCH LABEL CTEST-ARGS...: one ctest run; unbuilt executables and qemu's limits excluded.
run_ctest() {
  local arch=$1 label=$2 start rc=0
  shift 2
  local exclude="_NOT_BUILT\$|$QEMU_LIMITS|$QEMU_SLOW${CPU_EXCLUDE:-}"
  start=$(now)
  echo "test_cross: $arch $label: ctest $*"
  ctest --test-dir "build-$arch" --output-on-failure --timeout 900 -j "$JOBS" -E "$exclude" \
    "$@" "${ctest_extra[@]}" || rc=$?
  SUMMARY+=("$arch $label: ctest $* -> $([ $rc = 0 ] && echo passed || echo "FAILED ($rc)"), $(($(now) - start)) s")
  ((rc == 0)) || FAILED=1
}

# Whether tests that start qvl from a script can run: binfmt_misc, and qvl built.
runs_qvl() {  # runs_qvl ARCH BINFMT_OK
  [ "$2" = 1 ] && [ -x "build-$1/qvl" ]
}

if [ -f package-lock.json ] && [ ! -d node_modules ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

for arch in "${arches[@]}"; do
  case "$arch" in
    aarch64)
      start=$(now)
      install_aarch64
      SUMMARY+=("aarch64 install: $(($(now) - start)) s")
      configure_and_build aarch64 aarch64-linux-gnu.cmake
      binfmt=0
      if setup_binfmt aarch64; then binfmt=1; else
        echo "test_cross: binfmt_misc unavailable: tests that start qvl from scripts are left out"
      fi
      export QEMU_LD_PREFIX=/  # for binfmt-started binaries; scripts/qemu-run picks the same
      for cpu in "${cpus[@]}"; do
        export QVL_QEMU_CPU=$cpu QEMU_CPU=$cpu
        CPU_EXCLUDE=$(exclude_for_cpu "$cpu")
        read -r -a args <<<"$(ctest_args_for_cpu "$cpu")"
        run_ctest aarch64 "-cpu $cpu" "${args[@]}"
        read -r -a smoke <<<"$(smoke_args_for_cpu "$cpu")"
        if ((${#smoke[@]})) && runs_qvl aarch64 "$binfmt"; then
          run_ctest aarch64 "-cpu $cpu qvl" "${smoke[@]}"
        fi
      done
      unset QVL_QEMU_CPU QEMU_CPU QEMU_LD_PREFIX CPU_EXCLUDE
      ;;
    ppc64le)
      start=$(now)
      install_ppc64le
      SUMMARY+=("ppc64le install: $(($(now) - start)) s")
      export QVL_CROSS_SYSROOT=$PPC64EL_SYSROOT
      cmake_extra+=(-DQVL_DOCUMENTS=OFF -DQVL_VIDEO=OFF)
      configure_and_build ppc64le powerpc64le-linux-gnu.cmake
      unset 'cmake_extra[-1]'
      unset 'cmake_extra[-1]'
      binfmt=0
      setup_binfmt ppc64le && binfmt=1
      export QEMU_LD_PREFIX=$PPC64EL_SYSROOT QEMU_CPU=power9 QVL_QEMU_CPU=power9
      CPU_EXCLUDE="|$PPC64LE_SLOW"
      run_ctest ppc64le "-cpu power9" -L unit
      if runs_qvl ppc64le "$binfmt"; then
        run_ctest ppc64le "-cpu power9 qvl" -R "^(cli\.run_json_matches_golden|cli\.isa_option|server\.serving)$"
      fi
      unset QEMU_LD_PREFIX QEMU_CPU QVL_QEMU_CPU CPU_EXCLUDE
      ;;
  esac
done

echo "test_cross: summary"
printf '  %s\n' "${SUMMARY[@]}"
exit "$FAILED"
