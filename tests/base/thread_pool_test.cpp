#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace qvl {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  ThreadPool pool(3);
  for (size_t n : {0u, 1u, 2u, 7u, 64u, 1000u, 12345u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, RespectsGrain) {
  ThreadPool pool(2);
  std::atomic<int> small_ranges{0};
  pool.parallel_for(
      100,
      [&](size_t b, size_t e) {
        if (e - b < 10 && e != 100) small_ranges++;
      },
      10);
  EXPECT_EQ(small_ranges.load(), 0);
}

TEST(ThreadPool, PropagatesExceptions) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(100,
                                 [](size_t b, size_t) {
                                   if (b == 0) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<size_t> sum{0};
  pool.parallel_for(10, [&](size_t b, size_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 10u);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<size_t> total{0};
  pool.parallel_for(8, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      pool.parallel_for(5, [&](size_t b2, size_t e2) { total += e2 - b2; });
    }
  });
  EXPECT_EQ(total.load(), 40u);
}

TEST(ThreadPool, BackToBackJobsNeverMix) {
  // Short jobs in quick succession: a worker late for one job must not run ranges of the next
  // with the old function (claims carry the job's generation).
  ThreadPool pool(3);
  for (int job = 0; job < 3000; ++job) {
    const size_t n = 1 + static_cast<size_t>(job % 7);
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&, job](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i] += 1 + job;
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1 + job) << "job " << job;
  }
}

TEST(ThreadPool, CountsDispatchedRegionsOnly) {
  ThreadPool pool(2);
  const uint64_t before = pool.dispatch_count();
  pool.parallel_for(1, [](size_t, size_t) {});  // one item: runs inline
  pool.parallel_for(
      10, [](size_t, size_t) {}, 10);  // within one grain: inline
  EXPECT_EQ(pool.dispatch_count(), before);
  pool.parallel_for(100, [](size_t, size_t) {});
  EXPECT_EQ(pool.dispatch_count(), before + 1);
}

TEST(ThreadPool, PhysicalCoresPositive) {
  EXPECT_GE(physical_core_count(), 1);
}

}  // namespace
}  // namespace qvl
