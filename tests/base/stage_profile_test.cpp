#include "base/stage_profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace qvl::profile {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Burns at least `ms` of wall time.
void busy(double ms) {
  const auto start = Clock::now();
  while (ms_since(start) < ms) {
  }
}

int64_t count(const Totals& t, Phase p, Work w) {
  return t.count[static_cast<int>(p)][static_cast<int>(w)];
}

int64_t all_counts(const Totals& t) {
  int64_t n = 0;
  for (const auto& row : t.count)
    for (int64_t c : row) n += c;
  return n;
}

// Enables the profiler with clean totals and turns it off again however the test ends.
struct Enabled {
  Enabled() {
    reset();
    set_enabled(true);
  }
  ~Enabled() {
    set_enabled(false);
    reset();
  }
};

TEST(StageProfile, DisabledScopesRecordNothing) {
  reset();
  set_enabled(false);
  {
    const StageScope phase(Phase::kDecode);
    const StageScope work(Work::kMatmul);
    busy(1);
  }
  const Totals t = totals();
  EXPECT_EQ(all_counts(t), 0);
  EXPECT_EQ(t.phase_ms(Phase::kDecode), 0.0);
}

TEST(StageProfile, TimeGoesToTheInnermostScope) {
  const Enabled on;
  double inner_busy = 0, outer_wall = 0;
  const auto outer_start = Clock::now();
  {
    const StageScope phase(Phase::kPrefill);
    busy(1);
    {
      const StageScope work(Work::kMatmul);
      const auto start = Clock::now();
      busy(2);
      inner_busy = ms_since(start);
    }
    busy(1);
  }
  outer_wall = ms_since(outer_start);
  const Totals t = totals();
  EXPECT_EQ(count(t, Phase::kPrefill, Work::kMatmul), 1);
  EXPECT_EQ(count(t, Phase::kPrefill, Work::kOther), 1);
  EXPECT_EQ(all_counts(t), 2);
  const double matmul = t.ms(Phase::kPrefill, Work::kMatmul);
  const double other = t.ms(Phase::kPrefill, Work::kOther);
  // The inner scope holds at least what ran inside it; the outer one only its own part.
  EXPECT_GE(matmul, inner_busy);
  EXPECT_GE(other, 2.0);
  EXPECT_LE(matmul + other, outer_wall);
  EXPECT_LE(other, outer_wall - inner_busy);
}

TEST(StageProfile, WorkScopesUseTheThreadsPhase) {
  const Enabled on;
  {
    const StageScope vision(Phase::kVision);
    { const StageScope a(Work::kAttention); }
    {
      const StageScope prefill(Phase::kPrefill);  // a nested phase takes over until it closes
      const StageScope m(Work::kMatmul);
    }
    const StageScope m(Work::kMatmul);
  }
  const Totals t = totals();
  EXPECT_EQ(count(t, Phase::kVision, Work::kAttention), 1);
  EXPECT_EQ(count(t, Phase::kVision, Work::kMatmul), 1);
  EXPECT_EQ(count(t, Phase::kPrefill, Work::kMatmul), 1);
  EXPECT_EQ(count(t, Phase::kPrefill, Work::kOther), 1);
}

TEST(StageProfile, NamedPartsKeepTheGenericOperationsInsideThem) {
  const Enabled on;
  {
    const StageScope decode(Phase::kDecode);
    {
      const StageScope head(Work::kLmHead);
      const StageScope m(Work::kMatmul);  // the lm_head's own matmul
      busy(1);
    }
    {
      const StageScope a(Work::kAttention);
      const StageScope m(Work::kMatmul);  // generic in generic: innermost
    }
  }
  const Totals t = totals();
  EXPECT_EQ(count(t, Phase::kDecode, Work::kLmHead), 1);
  EXPECT_GE(t.ms(Phase::kDecode, Work::kLmHead), 1.0);
  EXPECT_EQ(count(t, Phase::kDecode, Work::kMatmul), 1);
  EXPECT_EQ(count(t, Phase::kDecode, Work::kAttention), 1);
}

TEST(StageProfile, ScopesOutsideAnyPhaseDoNothing) {
  const Enabled on;
  const StageScope decode(Phase::kDecode);
  std::thread worker([] {  // a pool worker: no phase of its own
    const StageScope m(Work::kMatmul);
  });
  worker.join();
  { const StageScope m(Work::kMatmul); }
  const Totals t = totals();
  EXPECT_EQ(count(t, Phase::kDecode, Work::kMatmul), 1);
  EXPECT_EQ(all_counts(t), 1);  // the open phase scope has not closed yet
}

TEST(StageProfile, ResetClearsAndNamesAreStable) {
  {
    const Enabled on;
    { const StageScope decode(Phase::kDecode); }
    EXPECT_EQ(all_counts(totals()), 1);
    reset();
    EXPECT_EQ(all_counts(totals()), 0);
  }
  EXPECT_STREQ(phase_name(Phase::kVision), "vision");
  EXPECT_STREQ(work_name(Work::kPatchEmbed), "patch_embed");
  EXPECT_STREQ(work_name(Work::kSampler), "sampler");
}

}  // namespace
}  // namespace qvl::profile
