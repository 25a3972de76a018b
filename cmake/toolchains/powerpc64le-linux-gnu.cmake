# Cross build for 64-bit little-endian POWER Linux with Debian's powerpc64le-linux-gnu-g++
# (crossbuild-essential-ppc64el); tests run under qemu-ppc64le (scripts/qemu-run). The scalar-only
# target: ops has no SIMD kernels for POWER, so it builds and tests the portable code paths only.
# (riscv64 would do the same job, but it is not a Debian 12 release architecture: bookworm has no
# riscv64 -dev packages.)
#
# The target's libraries come from a sysroot (a Debian bookworm ppc64el tree that
# scripts/test_cross.sh unpacks with debootstrap), not from co-installed :ppc64el multiarch
# packages: Multi-Arch: same packages must have the host's exact version, which a mirror whose
# ppc64el security index lags the amd64 one cannot provide (and a failing ppc64el index makes apt
# drop the whole bookworm-security suite, amd64 included). A sysroot has neither problem.
#   cmake -S . -B build-ppc64le -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/powerpc64le-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ppc64le)
set(QVL_CROSS_TRIPLE powerpc64le-linux-gnu)
if(NOT QVL_CROSS_SYSROOT)
  if(DEFINED ENV{QVL_CROSS_SYSROOT})
    set(QVL_CROSS_SYSROOT "$ENV{QVL_CROSS_SYSROOT}")
  else()
    set(QVL_CROSS_SYSROOT /var/cache/qvl-cross/ppc64el-bookworm)
  endif()
endif()
# try_compile projects get the variable too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES QVL_CROSS_SYSROOT)
set(CMAKE_C_COMPILER ${QVL_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${QVL_CROSS_TRIPLE}-g++)
set(CMAKE_SYSROOT ${QVL_CROSS_SYSROOT})
set(CMAKE_LIBRARY_ARCHITECTURE ${QVL_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${QVL_CROSS_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${QVL_CROSS_SYSROOT}/usr/lib/${QVL_CROSS_TRIPLE}/pkgconfig:${QVL_CROSS_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
get_filename_component(_qvl_source_dir "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
set(CMAKE_CROSSCOMPILING_EMULATOR "${_qvl_source_dir}/scripts/qemu-run;-L;${QVL_CROSS_SYSROOT};ppc64le")
