// CPU features that clang 14's __builtin_cpu_supports does not know by name (GCC 12 does),
// read from CPUID directly so that both compilers detect the same levels. The operating system's
// register-state checks come with the avx2 / avx512f test each is paired with.
#pragma once

#include <cpuid.h>

namespace qvl::ops::arch {

// F16C: half <-> float conversions (leaf 1, ECX bit 29; pair with avx or avx2).
inline bool cpuid_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return ((ecx >> 29) & 1u) != 0;
}

inline bool cpuid_leaf7_1_eax_bit(unsigned bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return ((eax >> bit) & 1u) != 0;
}

// AVX-VNNI: 256-bit vpdpbusd without AVX-512 (pair with avx2).
inline bool cpuid_has_avxvnni() {
  return cpuid_leaf7_1_eax_bit(4);
}

// AVX512_BF16: vdpbf16ps (pair with avx512f).
inline bool cpuid_has_avx512bf16() {
  return cpuid_leaf7_1_eax_bit(5);
}

}  // namespace qvl::ops::arch
