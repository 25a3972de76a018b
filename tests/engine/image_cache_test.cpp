#include "engine/image_cache.h"

#include <gtest/gtest.h>

namespace qvl {
namespace {

SharedImageFeatures features_of(int64_t floats) {
  auto f = std::make_shared<ImageFeatures>();
  f->vision.tokens = 1;
  f->vision.embeds.assign(static_cast<size_t>(floats), 1.0f);
  return f;
}

ImageKey key_of(const std::string& bytes, int64_t max_pixels = 1 << 20) {
  PreprocessConfig pre;
  pre.max_pixels = max_pixels;
  return image_key(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), pre);
}

TEST(ImageCache, HitsMissesAndKeys) {
  ImageFeatureCache cache(1 << 20);
  EXPECT_EQ(cache.find(key_of("a")), nullptr);
  const auto f = features_of(100);
  cache.insert(key_of("a"), f);
  EXPECT_EQ(cache.find(key_of("a")), f);
  // Other bytes, or the same bytes resized to another budget, are other entries.
  EXPECT_EQ(cache.find(key_of("b")), nullptr);
  EXPECT_EQ(cache.find(key_of("a", 1 << 18)), nullptr);
  const ImageCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes, image_features_bytes(*f));
}

TEST(ImageCache, EvictsLeastRecentlyUsedWithinBudget) {
  const size_t one = image_features_bytes(*features_of(1000));
  ImageFeatureCache cache(3 * one);
  cache.insert(key_of("a"), features_of(1000));
  cache.insert(key_of("b"), features_of(1000));
  cache.insert(key_of("c"), features_of(1000));
  ASSERT_NE(cache.find(key_of("a")), nullptr);  // a is now the most recent: b goes first
  cache.insert(key_of("d"), features_of(1000));
  EXPECT_EQ(cache.find(key_of("b")), nullptr);
  EXPECT_NE(cache.find(key_of("a")), nullptr);
  EXPECT_NE(cache.find(key_of("c")), nullptr);
  EXPECT_NE(cache.find(key_of("d")), nullptr);
  const ImageCacheStats s = cache.stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_LE(s.bytes, 3 * one);
}

TEST(ImageCache, EntryLargerThanBudgetIsNotKeptAndZeroBudgetKeepsNothing) {
  ImageFeatureCache small(1000);
  small.insert(key_of("big"), features_of(10000));
  EXPECT_EQ(small.find(key_of("big")), nullptr);
  EXPECT_EQ(small.stats().bytes, 0u);
  ImageFeatureCache off(0);
  off.insert(key_of("a"), features_of(1));
  EXPECT_EQ(off.find(key_of("a")), nullptr);
}

TEST(ImageCache, ReplacingAnEntryKeepsTheByteCountRight) {
  ImageFeatureCache cache(1 << 20);
  cache.insert(key_of("a"), features_of(100));
  cache.insert(key_of("a"), features_of(200));
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().bytes, image_features_bytes(*features_of(200)));
}

}  // namespace
}  // namespace qvl
