#include "ops/isa.h"

#include <algorithm>

namespace qvl::ops {

namespace {
struct Named {
  IsaLevel level;
  const char* name;
};
constexpr Named kNames[] = {{IsaLevel::kScalar, "scalar"},       {IsaLevel::kAvx2, "avx2"},
                            {IsaLevel::kAvx512, "avx512"},       {IsaLevel::kNeon, "neon"},
                            {IsaLevel::kNeonDotprod, "dotprod"}, {IsaLevel::kNeonI8mm, "i8mm"}};
}  // namespace

const char* isa_level_name(IsaLevel level) {
  for (const Named& n : kNames) {
    if (n.level == level) return n.name;
  }
  return "?";
}

std::optional<IsaLevel> parse_isa_level(std::string_view name) {
  for (const Named& n : kNames) {
    if (name == n.name) return n.level;
  }
  return std::nullopt;
}

const std::vector<IsaLevel>& arch_isa_levels() {
  return arch::levels();
}

IsaLevel lower_isa_level(IsaLevel level) {
  const auto& levels = arch_isa_levels();
  const auto it = std::find(levels.begin(), levels.end(), level);
  return it == levels.end() || it + 1 == levels.end() ? IsaLevel::kScalar : *(it + 1);
}

IsaLevel cpu_isa() {
  static const IsaLevel level = arch::detect_cpu_isa();
  return level;
}

bool cpu_runs_isa(IsaLevel level) {
  for (IsaLevel l = cpu_isa();; l = lower_isa_level(l)) {
    if (l == level) return true;
    if (l == IsaLevel::kScalar) return false;
  }
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = arch::detect_cpu_features();
  return features;
}

}  // namespace qvl::ops
