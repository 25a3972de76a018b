// x86-64 feature detection (GCC/clang's __builtin_cpu_supports reads CPUID once).
#include <string>
#include <vector>

#include "ops/isa.h"
#include "ops/x86/cpuid_features.h"

namespace qvl::ops::arch {

IsaLevel detect_cpu_isa() {
  __builtin_cpu_init();
  // DQ too: the decode attention and elementwise kernels are built for it (vextractf32x8 in
  // their reductions).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      cpuid_has_avx512bf16() && __builtin_cpu_supports("avx512vnni") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuid_has_f16c()) {
    return IsaLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuid_has_f16c()) {
    return IsaLevel::kAvx2;
  }
  return IsaLevel::kScalar;
}

CpuFeatures detect_cpu_features() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.arch = "x86-64";
  // The flags the kernels and their dispatch look at.
  const auto add = [&](const char* name, bool has) {
    if (has) f.flags.emplace_back(name);
  };
  add("avx2", __builtin_cpu_supports("avx2"));
  add("fma", __builtin_cpu_supports("fma"));
  add("f16c", __builtin_cpu_supports("avx") && cpuid_has_f16c());
  add("avxvnni", __builtin_cpu_supports("avx2") && cpuid_has_avxvnni());
  add("avx512f", __builtin_cpu_supports("avx512f"));
  add("avx512bw", __builtin_cpu_supports("avx512bw"));
  add("avx512vl", __builtin_cpu_supports("avx512vl"));
  add("avx512dq", __builtin_cpu_supports("avx512dq"));
  add("avx512bf16", __builtin_cpu_supports("avx512f") && cpuid_has_avx512bf16());
  add("avx512vnni", __builtin_cpu_supports("avx512vnni"));
  return f;
}

const std::vector<IsaLevel>& levels() {
  static const std::vector<IsaLevel> all = {IsaLevel::kAvx512, IsaLevel::kAvx2, IsaLevel::kScalar};
  return all;
}

}  // namespace qvl::ops::arch
