// Shared by the kernel tests: every ISA level this CPU can run, a scoped dispatch override, and
// seeded random inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "ops/packed_matrix.h"

namespace qvl::ops::testing {

inline std::vector<float> random_vector(size_t n, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Every level of this architecture that best_isa() reaches (itself and those below it), scalar
// first.
inline std::vector<IsaLevel> available_isas() {
  std::vector<IsaLevel> levels;
  for (IsaLevel l = best_isa();; l = lower_isa_level(l)) {
    levels.insert(levels.begin(), l);
    if (l == IsaLevel::kScalar) break;
  }
  return levels;
}

// Whether the dispatch may run `level` here (best_isa() or below it, on this architecture).
inline bool runs_level(IsaLevel level) {
  for (IsaLevel l : available_isas()) {
    if (l == level) return true;
  }
  return false;
}

// Restores automatic dispatch however a test ends.
struct IsaScope {
  explicit IsaScope(IsaLevel level) { set_isa_override(level); }
  ~IsaScope() { set_isa_override(std::nullopt); }
};

}  // namespace qvl::ops::testing
