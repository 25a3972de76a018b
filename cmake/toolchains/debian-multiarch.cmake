# Shared part of the Debian multiarch cross toolchain files (aarch64-linux-gnu.cmake):
# Debian's cross compilers (crossbuild-essential-ARCH) with the target's libraries installed as
# multiarch packages (libfoo-dev:ARCH, in /usr/lib/TRIPLE next to the host's /usr/lib/x86_64-linux-gnu).
# Expects QVL_CROSS_TRIPLE (e.g. aarch64-linux-gnu) and QVL_QEMU_ARCH (e.g. aarch64).
# scripts/test_cross.sh installs the packages, configures, builds and runs the tests under qemu.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${QVL_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${QVL_CROSS_TRIPLE}-g++)
# Multiarch: libraries and CMake package files of the target are under /usr/lib/TRIPLE; the host's
# (x86_64-linux-gnu) are never searched. Arch-independent packages (nlohmann-json, CLI11,
# googletest sources) come from /usr/share and /usr/include as for a native build.
set(CMAKE_LIBRARY_ARCHITECTURE ${QVL_CROSS_TRIPLE})
# Programs (node, chromium, pkg-config) are the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config: only the target's .pc files (and arch-independent ones).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${QVL_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# Test executables (ctest, gtest_discover_tests' --gtest_list_tests at build time) run under
# qemu-user through scripts/qemu-run; QVL_QEMU_CPU picks the CPU model at run time.
get_filename_component(_qvl_source_dir "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
set(CMAKE_CROSSCOMPILING_EMULATOR "${_qvl_source_dir}/scripts/qemu-run;${QVL_QEMU_ARCH}")
