// Kernel levels (instruction sets) and what this CPU has. Each architecture has its own ordered
// levels; the kernels of a level live in src/ops/<arch>/ and are reached only through the
// per-architecture registries (kernel_registry.h), so the generic code never names an ISA.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::ops {

// x86-64: kAvx2 (AVX2 + FMA + F16C), kAvx512 (F, BW, VL, DQ, BF16, VNNI).
// aarch64: kNeon (ASIMD, every aarch64 CPU), kNeonDotprod (+ SDOT/UDOT: Cortex-A76, Neoverse-N1),
// kNeonI8mm (+ SMMLA/USMMLA and BF16's BFMMLA: Neoverse-V1/V2/N2, Apple M2 and later).
// Every CPU runs kScalar: the oracles.
enum class IsaLevel { kScalar, kAvx2, kAvx512, kNeon, kNeonDotprod, kNeonI8mm };

// "scalar", "avx2", "avx512", "neon", "dotprod", "i8mm".
const char* isa_level_name(IsaLevel level);
std::optional<IsaLevel> parse_isa_level(std::string_view name);

// The levels of this build's architecture, best first, kScalar last (whatever the CPU has).
const std::vector<IsaLevel>& arch_isa_levels();
// The next level down on the same architecture (kScalar stays kScalar).
IsaLevel lower_isa_level(IsaLevel level);
// The best level this CPU supports (by its feature flags; see best_isa for the self-check).
IsaLevel cpu_isa();
bool cpu_runs_isa(IsaLevel level);

// What the CPU reports, for `qvl bench` and logs: the architecture ("x86-64", "aarch64", ...),
// the features the kernels care about (e.g. "avx512_vnni", "asimddp", "i8mm", "sve2") and the SVE
// vector length in bits (0 without SVE).
struct CpuFeatures {
  std::string arch;
  std::vector<std::string> flags;
  int sve_vector_bits = 0;
};
const CpuFeatures& cpu_features();

namespace arch {
// Provided by src/ops/<arch>/cpu_detect.cpp.
IsaLevel detect_cpu_isa();
CpuFeatures detect_cpu_features();
const std::vector<IsaLevel>& levels();
}  // namespace arch

}  // namespace qvl::ops
