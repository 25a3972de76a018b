# Cross build for 64-bit Arm Linux with Debian's aarch64-linux-gnu-g++ (crossbuild-essential-arm64)
# and the :arm64 multiarch -dev packages; tests run under qemu-aarch64 (scripts/qemu-run).
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(QVL_CROSS_TRIPLE aarch64-linux-gnu)
set(QVL_QEMU_ARCH aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-multiarch.cmake)
