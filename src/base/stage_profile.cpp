#include "base/stage_profile.h"

#include <chrono>

namespace qvl::profile {
namespace {

constexpr int kSlots = kPhases * kWorks;
std::array<std::atomic<int64_t>, kSlots> g_ns{};
std::array<std::atomic<int64_t>, kSlots> g_count{};
std::array<std::atomic<int64_t>, kPhases> g_dispatches{};

// The calling thread's phase (-1: none) and innermost open scope.
thread_local int t_phase = -1;
thread_local StageScope* t_current = nullptr;
thread_local int t_current_work = -1;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool is_generic(int work) {
  return work == static_cast<int>(Work::kMatmul) || work == static_cast<int>(Work::kAttention);
}

bool is_named_part(int work) {
  return work > static_cast<int>(Work::kAttention);
}

}  // namespace

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kVision:
      return "vision";
    case Phase::kPrefill:
      return "prefill";
    case Phase::kDecode:
      return "decode";
    case Phase::kCount:
      break;
  }
  return "?";
}

const char* work_name(Work work) {
  switch (work) {
    case Work::kOther:
      return "other";
    case Work::kMatmul:
      return "matmul";
    case Work::kAttention:
      return "attention";
    case Work::kPatchEmbed:
      return "patch_embed";
    case Work::kMerger:
      return "merger";
    case Work::kLmHead:
      return "lm_head";
    case Work::kSampler:
      return "sampler";
    case Work::kCount:
      break;
  }
  return "?";
}

void set_enabled(bool on) {
  enabled_flag().store(on, std::memory_order_relaxed);
}

double Totals::phase_ms(Phase p) const {
  double sum = 0;
  for (int w = 0; w < kWorks; ++w) sum += ms(p, static_cast<Work>(w));
  return sum;
}

Totals totals() {
  Totals t;
  for (int s = 0; s < kSlots; ++s) {
    t.ns[s / kWorks][s % kWorks] = g_ns[s].load(std::memory_order_relaxed);
    t.count[s / kWorks][s % kWorks] = g_count[s].load(std::memory_order_relaxed);
  }
  for (int p = 0; p < kPhases; ++p)
    t.dispatches[p] = g_dispatches[p].load(std::memory_order_relaxed);
  return t;
}

void reset() {
  for (int s = 0; s < kSlots; ++s) {
    g_ns[s].store(0, std::memory_order_relaxed);
    g_count[s].store(0, std::memory_order_relaxed);
  }
  for (auto& d : g_dispatches) d.store(0, std::memory_order_relaxed);
}

void note_dispatch() {
  if (enabled() && t_phase >= 0) g_dispatches[t_phase].fetch_add(1, std::memory_order_relaxed);
}

void StageScope::open(int phase, Work work) {
  const int w = static_cast<int>(work);
  if (phase < 0) {
    // A work scope: only within a phase, and generic operations stay inside a named part.
    if (t_phase < 0) return;
    if (is_generic(w) && t_current != nullptr && is_named_part(t_current_work)) return;
    phase = t_phase;
  }
  saved_phase_ = t_phase;
  t_phase = phase;
  slot_ = phase * kWorks + w;
  parent_ = t_current;
  t_current = this;
  t_current_work = w;
  start_ns_ = now_ns();
}

void StageScope::close() {
  const int64_t elapsed = now_ns() - start_ns_;
  g_ns[slot_].fetch_add(elapsed - child_ns_, std::memory_order_relaxed);
  g_count[slot_].fetch_add(1, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->child_ns_ += elapsed;
  t_current = parent_;
  t_current_work = parent_ != nullptr ? parent_->slot_ % kWorks : -1;
  t_phase = saved_phase_;
}

}  // namespace qvl::profile
