#include "engine/kv_pool.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "base/error.h"
#include "proc_mappings.h"

namespace qvl {
namespace {

constexpr int64_t kLayers = 2, kKvHeads = 2, kHeadDim = 32, kWidth = kKvHeads * kHeadDim;
constexpr int64_t kPage = 32;

size_t page_bytes(KVType type) {
  return static_cast<size_t>(kLayers * 2 * kPage) * kv_position_bytes(type, kWidth);
}

std::vector<uint64_t> iota_keys(int64_t n, uint64_t first = 0) {
  std::vector<uint64_t> k(static_cast<size_t>(n));
  std::iota(k.begin(), k.end(), first);
  return k;
}

// Writes n positions of deterministic keys/values (value depends on position and layer).
void fill(KVSequence& seq, int64_t n, const std::vector<uint64_t>& keys, PagedSequence* paged) {
  if (paged) paged->push_keys(keys.data() + paged->length(), n);
  seq.reserve_more(n);
  std::vector<float> k(static_cast<size_t>(n * kWidth)), v(k.size());
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < kWidth; ++c) {
        const double pos = static_cast<double>(seq.length() + i);
        k[i * kWidth + c] = static_cast<float>(std::sin(pos * 0.37 + c * 0.11 + layer));
        v[i * kWidth + c] = static_cast<float>(std::cos(pos * 0.23 - c * 0.07 + layer));
      }
    }
    seq.write(layer, k.data(), v.data(), n);
  }
  seq.commit(n);
}

// Writes n more positions (as fill does) and returns every layer's attention output for them.
std::vector<float> attend_next(PagedSequence& seq, int64_t n, const std::vector<uint64_t>& keys) {
  const ops::AttentionShape shape{4, kKvHeads, kHeadDim, 0.25f};
  seq.push_keys(keys.data() + seq.length(), n);
  seq.reserve_more(n);
  std::vector<float> q(static_cast<size_t>(n * 4 * kHeadDim)), out(q.size()), all;
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(std::sin(i * 0.3));
  std::vector<float> k(static_cast<size_t>(n * kWidth), 0.25f), v(k.size(), -0.5f);
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    seq.write(layer, k.data(), v.data(), n);
    seq.attend(layer, q.data(), 0, n, shape, out.data());
    all.insert(all.end(), out.begin(), out.end());
  }
  seq.commit(n);
  return all;
}

TEST(KVPool, AllocatesWithinBudgetAndFreesUnindexedPages) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 3 * page_bytes(KVType::kF16) + 100);
  EXPECT_EQ(pool.total_pages(), 3);
  const int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  EXPECT_GE(a, 0);
  EXPECT_GE(b, 0);
  EXPECT_GE(c, 0);
  EXPECT_EQ(pool.allocate(), -1);
  EXPECT_EQ(pool.available_pages(), 0);
  pool.release(b);
  EXPECT_EQ(pool.available_pages(), 1);
  EXPECT_EQ(pool.allocate(), b);
  EXPECT_EQ(pool.stats().pages_used, 3);
}

TEST(KVPool, BudgetBelowTwoPagesIsAClearError) {
  try {
    KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, page_bytes(KVType::kF16));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("KV cache budget"), std::string::npos) << e.what();
  }
}

TEST(KVPool, FinishedSequenceIsReusedByFullPagesAndItsPartialPage) {
  // (8-bit pages are head-major: the partial copy is one run per head.)
  for (KVType type : {KVType::kF16, KVType::kF32, KVType::kQ8}) {
    KVPool pool(kLayers, kKvHeads, kHeadDim, type, kPage, 16 * page_bytes(type));
    const auto keys = iota_keys(100);
    {
      PagedSequence first(pool);
      fill(first, 70, keys, &first);  // 2 full pages + 6 rows
      EXPECT_EQ(first.pages(), 3);
    }  // released: every page stays cached
    EXPECT_EQ(pool.stats().pages_cached, 3);

    // Goes on from all 70: the partial page itself is taken over (no fourth page, no copy).
    KVPool::Match m = pool.lookup(keys.data(), 99);
    EXPECT_EQ(m.matched, 70);
    ASSERT_EQ(m.pages.size(), 3u);
    EXPECT_EQ(pool.stats().pages_used, 3);
    EXPECT_EQ(pool.stats().pages_cached, 0);
    // Meanwhile another prompt with the same 70 keys gets a copy: the page is in use.
    KVPool::Match copy = pool.lookup(keys.data(), 99);
    EXPECT_EQ(copy.matched, 70);
    ASSERT_EQ(copy.pages.size(), 3u);
    EXPECT_NE(copy.pages[2], m.pages[2]);
    EXPECT_EQ(copy.pages[1], m.pages[1]);  // full pages are shared
    PagedSequence second(pool), third(pool);
    second.push_keys(keys.data(), 70);
    second.adopt(std::move(m));
    third.push_keys(keys.data(), 70);
    third.adopt(std::move(copy));
    EXPECT_EQ(second.length(), 70);
    // The reused rows hold what a cold sequence computes: attention over them agrees exactly.
    PagedSequence cold(pool);
    fill(cold, 70, keys, &cold);
    const auto want = attend_next(cold, 3, keys);
    EXPECT_EQ(attend_next(second, 3, keys), want);
    EXPECT_EQ(attend_next(third, 3, keys), want);
    EXPECT_EQ(pool.stats().prefix_hit_tokens, 140u);
  }
}

TEST(KVPool, ATakenOverPartialPageIsIndexedWithItsLongerContent) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 16 * page_bytes(KVType::kF16));
  const auto keys = iota_keys(120);
  {
    PagedSequence turn1(pool);
    fill(turn1, 40, keys, &turn1);  // 1 full page + 8 rows
  }
  {
    KVPool::Match m = pool.lookup(keys.data(), 119);
    ASSERT_EQ(m.matched, 40);
    PagedSequence turn2(pool);
    turn2.push_keys(keys.data(), 40);
    turn2.adopt(std::move(m));
    fill(turn2, 12, keys, &turn2);  // 52: the taken page now holds 20 rows
  }
  KVPool::Match m3 = pool.lookup(keys.data(), 119);
  EXPECT_EQ(m3.matched, 52);
  for (int32_t p : m3.pages) pool.release(p);
  {
    // Filled past its end, the taken page is indexed as a full page.
    KVPool::Match m = pool.lookup(keys.data(), 119);
    ASSERT_EQ(m.matched, 52);
    PagedSequence turn3(pool);
    turn3.push_keys(keys.data(), 52);
    turn3.adopt(std::move(m));
    fill(turn3, 30, keys, &turn3);  // 82: 2 full pages + 18 rows
  }
  KVPool::Match m4 = pool.lookup(keys.data(), 119);
  EXPECT_EQ(m4.matched, 82);
  // A prompt that leaves the cached content inside the partial page copies its shared rows and
  // leaves the page (and its longer content) cached.
  auto other = keys;
  other[70] = 999;
  for (int32_t p : m4.pages) pool.release(p);
  KVPool::Match m5 = pool.lookup(other.data(), 119);
  EXPECT_EQ(m5.matched, 70);
  for (int32_t p : m5.pages) pool.release(p);
  KVPool::Match m6 = pool.lookup(keys.data(), 119);
  EXPECT_EQ(m6.matched, 82);
  for (int32_t p : m6.pages) pool.release(p);
}

TEST(KVPool, MatchStopsWhereKeysDifferAndCopiesTheSharedPartOfAFullPage) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 16 * page_bytes(KVType::kF16));
  const auto keys = iota_keys(64);
  {
    PagedSequence s(pool);
    fill(s, 64, keys, &s);
  }
  auto other = keys;
  other[40] = 999;  // differs inside the second page
  KVPool::Match m = pool.lookup(other.data(), 63);
  EXPECT_EQ(m.matched, 40);
  ASSERT_EQ(m.pages.size(), 2u);
  // Same tokens at another place in the chain (a different first page) do not match.
  auto shifted = iota_keys(64, 1000);
  std::copy(keys.begin() + 32, keys.end(), shifted.begin() + 32);
  KVPool::Match none = pool.lookup(shifted.data(), 63);
  EXPECT_EQ(none.matched, 0);
  for (int32_t p : m.pages) pool.release(p);
}

TEST(KVPool, LookupLeavesTheLastPositionToCompute) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 16 * page_bytes(KVType::kF16));
  const auto keys = iota_keys(64);
  {
    PagedSequence s(pool);
    fill(s, 64, keys, &s);
  }
  KVPool::Match m = pool.lookup(keys.data(), 63);  // the caller computes position 63
  EXPECT_EQ(m.matched, 63);
  for (int32_t p : m.pages) pool.release(p);
}

TEST(KVPool, WithoutPrefixCachingFinishedPagesAreFreeAndReusedFirst) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 16 * page_bytes(KVType::kF16),
              /*prefix_caching=*/false);
  const auto keys = iota_keys(80);
  {
    PagedSequence s(pool);
    fill(s, 80, keys, &s);  // pages 0, 1, 2 of the fresh pool
    EXPECT_EQ(pool.stats().pages_used, 3);
  }
  // Nothing stays cached and nothing matches.
  EXPECT_EQ(pool.stats().pages_cached, 0);
  EXPECT_EQ(pool.available_pages(), 16);
  KVPool::Match m = pool.lookup(keys.data(), 79);
  EXPECT_EQ(m.matched, 0);
  EXPECT_TRUE(m.pages.empty());
  // The pages just freed (already resident) are handed out before any never touched.
  int32_t pages[3];
  for (int32_t& p : pages) p = pool.allocate();
  for (int32_t p : pages) EXPECT_LT(p, 3);
  for (int32_t p : pages) pool.release(p);
  EXPECT_EQ(pool.stats().prefix_hit_tokens, 0u);
}

TEST(KVPool, FreePagesGiveTheirMemoryBackAndCachedPagesKeepTheirs) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 16 * page_bytes(KVType::kF16));
  const auto keys = iota_keys(80);
  {
    PagedSequence s(pool);
    fill(s, 80, keys, &s);  // finished: its 3 pages stay cached (indexed)
  }
  ASSERT_EQ(pool.stats().pages_cached, 3);
  std::vector<uint8_t> cached_before(pool.keys(0, 0), pool.keys(0, 0) + pool.position_bytes());
  // Two pages written and freed (not indexed), one still in use.
  const int32_t a = pool.allocate(), b = pool.allocate(), in_use = pool.allocate();
  for (int32_t p : {a, b, in_use}) {
    for (int64_t layer = 0; layer < kLayers; ++layer) {
      std::fill_n(pool.keys(p, layer), kPage * pool.position_bytes(), uint8_t{0x5a});
      std::fill_n(pool.values(p, layer), kPage * pool.position_bytes(), uint8_t{0xa5});
    }
  }
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.release_free_memory(), 2 * page_bytes(KVType::kF16));
  EXPECT_EQ(pool.release_free_memory(), 0u);  // nothing written since
  // Given back: the system hands out zeroed pages again; the others keep their bytes.
  for (int32_t p : {a, b}) {
    EXPECT_EQ(pool.keys(p, 0)[0], 0);
    EXPECT_EQ(pool.values(p, kLayers - 1)[kPage * pool.position_bytes() - 1], 0);
  }
  EXPECT_EQ(pool.keys(in_use, 0)[0], 0x5a);
  EXPECT_TRUE(std::equal(cached_before.begin(), cached_before.end(), pool.keys(0, 0)));
  KVPool::Match m = pool.lookup(keys.data(), 79);
  EXPECT_EQ(m.matched, 79);  // the cached prefix still matches (full pages and the copied rest)
  for (int32_t p : m.pages) pool.release(p);
  pool.release(in_use);
}

// Whether every system page of [data, data + size) is resident.
bool resident(const uint8_t* data, size_t size) {
  const auto sys_page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data) & ~(sys_page - 1);
  const auto end = reinterpret_cast<uintptr_t>(data) + size;
  std::vector<unsigned char> in((end - begin + sys_page - 1) / sys_page);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, in.data()) != 0) return false;
  return std::all_of(in.begin(), in.end(), [](unsigned char v) { return (v & 1) != 0; });
}

TEST(KVPool, AllocatedPagesAreMappedInWholeAlsoAfterTheirMemoryWasGivenBack) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 4 * page_bytes(KVType::kF16));
  pool.set_map_whole_pages(true);
  const int32_t p = pool.allocate();
  const auto whole_page_resident = [&] {
    return resident(pool.keys(p, 0), page_bytes(KVType::kF16));  // layer 0's keys come first
  };
  EXPECT_TRUE(whole_page_resident()) << "a fresh page, before any write";
  std::fill_n(pool.keys(p, 0), pool.position_bytes(), uint8_t{7});
  pool.release(p);
  ASSERT_EQ(pool.release_free_memory(), page_bytes(KVType::kF16));
  EXPECT_FALSE(whole_page_resident()) << "given back to the system";
  EXPECT_EQ(pool.allocate(), p);
  EXPECT_TRUE(whole_page_resident()) << "allocated again";
  EXPECT_EQ(pool.keys(p, 0)[0], 0);  // zeroed, as after a fault
  pool.release(p);
}

TEST(KVPool, ReleaseKeepsThePagesAllocatedNextWarm) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 4 * page_bytes(KVType::kF16));
  pool.set_map_whole_pages(true);  // as a server's
  const int32_t a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  for (int32_t p : {a, b, c}) std::fill_n(pool.keys(p, 0), pool.position_bytes(), uint8_t{9});
  pool.release(a);
  pool.release(b);
  pool.release(c);
  // c then b come back first: they keep their memory (and bytes), a and the unused 4th page not.
  EXPECT_EQ(pool.release_free_memory(2), page_bytes(KVType::kF16));
  EXPECT_EQ(pool.release_free_memory(2), 0u);
  EXPECT_EQ(pool.keys(a, 0)[0], 0);
  for (int32_t p : {c, b}) {
    EXPECT_TRUE(resident(pool.keys(p, 0), page_bytes(KVType::kF16)));
    EXPECT_EQ(pool.keys(p, 0)[0], 9);
    EXPECT_EQ(pool.allocate(), p);
  }
  EXPECT_EQ(pool.release_free_memory(5), 0u);  // a: nothing written since
  pool.release(b);
  pool.release(c);
}

TEST(KVPool, WarmUpMapsInTheFreePagesAllocatedNext) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 4 * page_bytes(KVType::kF16));
  pool.set_map_whole_pages(true);  // as a server's
  const int32_t a = pool.allocate(), b = pool.allocate();
  std::fill_n(pool.keys(a, 0), pool.position_bytes(), uint8_t{9});
  pool.release(b);
  pool.release(a);      // allocated next, then b
  pool.warm_up(3);      // a (untouched: written), b and the page after them
  const int32_t c = 2;  // never allocated: pages are handed out from 0 up
  for (int32_t p : {a, b, c}) EXPECT_TRUE(resident(pool.keys(p, 0), page_bytes(KVType::kF16)));
  EXPECT_EQ(pool.keys(a, 0)[0], 9);
  EXPECT_EQ(pool.keys(b, 0)[0], 0);
  EXPECT_EQ(pool.release_free_memory(0), 3 * page_bytes(KVType::kF16));  // page 3 never mapped
}

TEST(KVPool, WarmUpGivesWayWhenInterrupted) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 4 * page_bytes(KVType::kF16));
  pool.set_map_whole_pages(true);
  int asked = 0;
  EXPECT_FALSE(pool.warm_up(2, [&] { return ++asked > 0; }));
  EXPECT_EQ(asked, 1);
  // Nothing was mapped: the pages allocated next are still not resident.
  EXPECT_FALSE(resident(pool.keys(0, 0), page_bytes(KVType::kF16)));
  EXPECT_FALSE(resident(pool.keys(1, 0), page_bytes(KVType::kF16)));
  EXPECT_TRUE(pool.warm_up(2, [] { return false; }));
  EXPECT_TRUE(resident(pool.keys(0, 0), page_bytes(KVType::kF16)));
  EXPECT_TRUE(resident(pool.keys(1, 0), page_bytes(KVType::kF16)));
}

TEST(KVPool, IdlePagesAreEvictedLeastRecentlyUsedFirst) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 4 * page_bytes(KVType::kF16));
  const auto a = iota_keys(32, 0), b = iota_keys(32, 100), c = iota_keys(32, 200);
  for (const auto* keys : {&a, &b, &c}) {
    PagedSequence s(pool);
    fill(s, 32, *keys, &s);
  }
  EXPECT_EQ(pool.stats().pages_cached, 3);
  // Touch a so b becomes the least recently used, then take 2 pages: 1 free + b.
  KVPool::Match hit = pool.lookup(a.data(), 32);
  EXPECT_EQ(hit.matched, 32);
  for (int32_t p : hit.pages) pool.release(p);
  const int32_t x = pool.allocate(), y = pool.allocate();
  EXPECT_GE(x, 0);
  EXPECT_GE(y, 0);
  EXPECT_EQ(pool.stats().evictions, 1u);
  EXPECT_EQ(pool.lookup(b.data(), 32).matched, 0);
  KVPool::Match still = pool.lookup(a.data(), 32);
  EXPECT_EQ(still.matched, 32);
  for (int32_t p : still.pages) pool.release(p);
  pool.release(x);
  pool.release(y);
}

TEST(KVPool, SequenceFailsCleanlyWhenThePoolIsFull) {
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, 2 * page_bytes(KVType::kF16));
  PagedSequence s(pool);
  const auto keys = iota_keys(200);
  fill(s, 64, keys, &s);
  try {
    s.reserve_more(1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
  }
}

// Paged attention equals the contiguous cache's, bit for bit, across page boundaries.
TEST(PagedSequence, AttentionEqualsTheContiguousCache) {
  for (KVType type : {KVType::kF16, KVType::kF32, KVType::kQ8}) {
    SCOPED_TRACE(kv_type_name(type));
    KVPool pool(kLayers, kKvHeads, kHeadDim, type, kPage, 32 * page_bytes(type));
    // Scatter the sequence's pages over the pool.
    std::vector<int32_t> spacers;
    for (int i = 0; i < 5; ++i) spacers.push_back(pool.allocate());
    pool.release(spacers[1]);
    pool.release(spacers[3]);
    PagedSequence paged(pool);
    KVCache contiguous(kLayers, kWidth, type);
    const auto keys = iota_keys(200);
    const ops::AttentionShape shape{4, kKvHeads, kHeadDim, 0.25f};
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (const int64_t chunk : {45, 1, 1, 30, 1, 20}) {
      std::vector<float> q(static_cast<size_t>(chunk * 4 * kHeadDim));
      for (auto& x : q) x = dist(rng);
      std::vector<float> k(static_cast<size_t>(chunk * kWidth)), v(k.size());
      for (auto& x : k) x = dist(rng);
      for (auto& x : v) x = dist(rng);
      paged.push_keys(keys.data() + paged.length(), chunk);
      paged.reserve_more(chunk);
      contiguous.reserve_more(chunk);
      for (int64_t layer = 0; layer < kLayers; ++layer) {
        paged.write(layer, k.data(), v.data(), chunk);
        contiguous.write(layer, k.data(), v.data(), chunk);
        std::vector<float> a(q.size()), b(q.size());
        paged.attend(layer, q.data(), 0, chunk, shape, a.data());
        contiguous.attend(layer, q.data(), 0, chunk, shape, b.data());
        ASSERT_EQ(a, b) << "chunk " << chunk << " at " << paged.length();
      }
      paged.commit(chunk);
      contiguous.commit(chunk);
    }
    for (int i : {0, 2, 4}) pool.release(spacers[i]);
  }
}

TEST(KVPool, EightBitPagesHoldMorePositionsInTheSameBudget) {
  const size_t budget = 64 * page_bytes(KVType::kF16);
  KVPool half(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, budget);
  KVPool eight(kLayers, kKvHeads, kHeadDim, KVType::kQ8, kPage, budget);
  // 36 bytes per 32 values against 64: 1.78x the pages.
  EXPECT_EQ(half.total_pages(), 64);
  EXPECT_EQ(eight.total_pages(), static_cast<int64_t>(budget / page_bytes(KVType::kQ8)));
  EXPECT_GE(eight.total_pages() * 100, half.total_pages() * 176);
  EXPECT_EQ(eight.stats().page_bytes, page_bytes(KVType::kQ8));
}

TEST(KVPool, AsksForHugePagesWhereTheSystemHasThem) {
  if (!test_util::system_has_huge_pages()) GTEST_SKIP() << "no transparent huge pages here";
  // 16 MiB: the 2 MiB-aligned part of the pool (most of it) takes the advice.
  KVPool pool(kLayers, kKvHeads, kHeadDim, KVType::kF16, kPage, size_t{16} << 20);
  const std::string flags = test_util::mapping_flags(pool.keys(pool.total_pages() / 2, 0));
  if (flags.empty()) GTEST_SKIP() << "/proc/self/smaps does not list the pool (an emulator's)";
  // "hg": the mapping carries MADV_HUGEPAGE, so its faults take 2 MiB pages when they can.
  EXPECT_NE(flags.find(" hg "), std::string::npos) << flags;
}

TEST(KVType, NamesParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(parse_kv_type("f16"), KVType::kF16);
  EXPECT_EQ(parse_kv_type("q8"), KVType::kQ8);
  EXPECT_STREQ(kv_type_name(KVType::kQ8), "q8");
  EXPECT_THROW(parse_kv_type("q4"), Error);
  EXPECT_THROW(parse_kv_type("f32"), Error);  // comes with exact weights, not chosen
  EXPECT_EQ(kv_position_bytes(KVType::kQ8, 1024), 1152u);
}

}  // namespace
}  // namespace qvl
