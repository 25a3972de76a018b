// CPUs without kernels of their own (riscv64, ppc64le, s390x, ...) run the scalar oracles.
#include <sys/utsname.h>

#include <string>
#include <vector>

#include "ops/isa.h"

namespace qvl::ops::arch {

IsaLevel detect_cpu_isa() {
  return IsaLevel::kScalar;
}

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  utsname u{};
  f.arch = uname(&u) == 0 ? u.machine : "unknown";
  return f;
}

const std::vector<IsaLevel>& levels() {
  static const std::vector<IsaLevel> all = {IsaLevel::kScalar};
  return all;
}

}  // namespace qvl::ops::arch
