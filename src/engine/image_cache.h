// Vision outputs of recently seen images, so the same picture in a later turn or another
// conversation skips decoding, resizing and the vision tower. Keyed by the SHA-256 of the encoded
// bytes and the pixel budget they were resized to (the budget changes the grid and so the
// features). Least recently used entries are dropped when the byte budget is exceeded. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/content_hash.h"
#include "engine/image_features.h"

namespace qvl {

struct ImageKey {
  Digest256 digest{};
  int64_t min_pixels = 0;
  int64_t max_pixels = 0;
  bool operator==(const ImageKey& o) const {
    return digest == o.digest && min_pixels == o.min_pixels && max_pixels == o.max_pixels;
  }
};

ImageKey image_key(const uint8_t* data, size_t size, const PreprocessConfig& preprocess);

// Bytes an entry holds (embeddings and DeepStack features).
size_t image_features_bytes(const ImageFeatures& f);

struct ImageCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  size_t bytes = 0;
  size_t entries = 0;
  size_t budget_bytes = 0;
};

class ImageFeatureCache {
 public:
  explicit ImageFeatureCache(size_t budget_bytes) : budget_(budget_bytes) {}

  // The cached features (and marks them recently used), or null; counts a hit or a miss.
  std::shared_ptr<const ImageFeatures> find(const ImageKey& key);
  // Adds (or replaces) an entry, then evicts the least recently used ones over the budget. An
  // entry larger than the whole budget is not kept.
  void insert(const ImageKey& key, std::shared_ptr<const ImageFeatures> features);
  ImageCacheStats stats() const;

 private:
  struct KeyHash {
    size_t operator()(const ImageKey& k) const {
      return static_cast<size_t>(digest_prefix(k.digest) ^ static_cast<uint64_t>(k.max_pixels));
    }
  };
  struct Entry {
    ImageKey key;
    std::shared_ptr<const ImageFeatures> features;
    size_t bytes;
  };
  void evict_over_budget();

  mutable std::mutex mutex_;
  size_t budget_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<ImageKey, std::list<Entry>::iterator, KeyHash> index_;
  ImageCacheStats stats_;
};

}  // namespace qvl
