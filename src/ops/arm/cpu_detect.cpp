// aarch64 feature detection from the kernel's hardware capability words (Linux getauxval): the
// instructions a user-space process may use, whatever the CPU's name.
#include <asm/hwcap.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

#include <string>
#include <vector>

#include "ops/isa.h"

namespace qvl::ops::arch {

namespace {
// Older kernel headers lack the newer bits; their values are fixed by the Linux ABI.
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif
#ifndef HWCAP2_SVE2
#define HWCAP2_SVE2 (1UL << 1)
#endif

bool has1(unsigned long bit) {
  return (getauxval(AT_HWCAP) & bit) != 0;
}
bool has2(unsigned long bit) {
  return (getauxval(AT_HWCAP2) & bit) != 0;
}
}  // namespace

IsaLevel detect_cpu_isa() {
  if (!has1(HWCAP_ASIMD)) return IsaLevel::kScalar;
  if (!has1(HWCAP_ASIMDDP)) return IsaLevel::kNeon;
  // The i8mm level also runs BFMMLA (bf16 GEMM), so it needs BF16 too: ARMv8.6 makes both
  // mandatory and every core with I8MM (Neoverse-V1/V2/N2, Cortex-A510/A710/X2, Apple M2) has
  // BF16. One level per feature set keeps a level's kernels, and so its bits, the same on every
  // CPU that runs it; a level of its own for BF16 would split nothing real.
  const bool i8mm = has2(HWCAP2_I8MM) && has2(HWCAP2_BF16);
  return i8mm ? IsaLevel::kNeonI8mm : IsaLevel::kNeonDotprod;
}

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  f.arch = "aarch64";
  const auto add = [&](const char* name, bool has) {
    if (has) f.flags.emplace_back(name);
  };
  add("asimd", has1(HWCAP_ASIMD));
  add("asimddp", has1(HWCAP_ASIMDDP));
  add("i8mm", has2(HWCAP2_I8MM));
  add("bf16", has2(HWCAP2_BF16));
  add("fphp", has1(HWCAP_FPHP));
  add("asimdhp", has1(HWCAP_ASIMDHP));
  add("sve", has1(HWCAP_SVE));
  add("sve2", has2(HWCAP2_SVE2));
  if (has1(HWCAP_SVE)) {
    // PR_SVE_GET_VL gives the vector length in bytes in its low 16 bits.
    const int vl = prctl(PR_SVE_GET_VL);
    if (vl > 0) f.sve_vector_bits = (vl & 0xffff) * 8;
  }
  return f;
}

const std::vector<IsaLevel>& levels() {
  static const std::vector<IsaLevel> all = {IsaLevel::kNeonI8mm, IsaLevel::kNeonDotprod,
                                            IsaLevel::kNeon, IsaLevel::kScalar};
  return all;
}

}  // namespace qvl::ops::arch
