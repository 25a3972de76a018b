// Opt-in stage profiler: where the time of vision, prefill and decode goes (`qvl bench`).
//
// Scopes are RAII objects placed around parts of the work. A phase scope (vision, prefill,
// decode) marks what the calling thread is doing; work scopes inside it (matmul, attention,
// lm_head, ...) add their elapsed time to the slot (phase, work). Time goes to the innermost
// scope only (a parent's slot receives its time minus its children's), so the phase's kOther
// slot collects whatever no work scope covers. Generic operations (kMatmul, kAttention) nested in
// a named part (kPatchEmbed, kMerger, kLmHead, kSampler) count to that part, not to themselves.
//
// Disabled (the default), a scope costs one relaxed atomic load. Enabled, two clock reads and
// one relaxed atomic add; no allocation. Scopes on threads outside any phase (pool workers) do
// nothing, so kernels may open scopes freely. Totals are process-wide; concurrent requests would
// mix, which is fine for the single-request benchmarks it serves.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace qvl::profile {

enum class Phase : uint8_t { kVision, kPrefill, kDecode, kCount };
enum class Work : uint8_t {
  kOther,       // the phase itself: whatever no other scope covers
  kMatmul,      // generic: a matrix product
  kAttention,   // generic: scaled dot-product attention
  kPatchEmbed,  // named parts, which keep the generic operations nested in them
  kMerger,
  kLmHead,
  kSampler,
  kCount
};
inline constexpr int kPhases = static_cast<int>(Phase::kCount);
inline constexpr int kWorks = static_cast<int>(Work::kCount);

const char* phase_name(Phase phase);  // "vision", "prefill", "decode"
const char* work_name(Work work);     // "other", "matmul", "attention", "patch_embed", ...

// Process-wide switch (off by default).
void set_enabled(bool on);
inline std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}
inline bool enabled() {
  return enabled_flag().load(std::memory_order_relaxed);
}

// Accumulated nanoseconds and scope counts per (phase, work).
struct Totals {
  std::array<std::array<int64_t, kWorks>, kPhases> ns{};
  std::array<std::array<int64_t, kWorks>, kPhases> count{};
  std::array<int64_t, kPhases> dispatches{};  // thread-pool parallel regions per phase

  double ms(Phase p, Work w) const {
    return static_cast<double>(ns[static_cast<int>(p)][static_cast<int>(w)]) * 1e-6;
  }
  double phase_ms(Phase p) const;  // the sum over works
};
Totals totals();
void reset();

// Counts one thread-pool parallel region for the calling thread's phase (no-op when disabled or
// outside any phase): decode's per-token synchronisation cost is roughly proportional to it.
void note_dispatch();

class StageScope {
 public:
  // A phase scope: sets the calling thread's phase until it closes; its own time is (phase,
  // kOther).
  explicit StageScope(Phase phase) {
    if (enabled()) open(static_cast<int>(phase), Work::kOther);
  }
  // A work scope within the calling thread's current phase (no-op outside any phase).
  explicit StageScope(Work work) {
    if (enabled()) open(-1, work);
  }
  ~StageScope() {
    if (slot_ >= 0) close();
  }
  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;

 private:
  void open(int phase, Work work);
  void close();

  int slot_ = -1;  // phase * kWorks + work, or -1 when inactive
  int saved_phase_ = -1;
  StageScope* parent_ = nullptr;
  int64_t start_ns_ = 0;
  int64_t child_ns_ = 0;
};

}  // namespace qvl::profile
