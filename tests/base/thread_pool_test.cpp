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

TEST(ThreadPool, PhysicalCoresPositive) {
  EXPECT_GE(physical_core_count(), 1);
}

}  // namespace
}  // namespace qvl
