#include "engine/image_cache.h"

namespace qvl {

ImageKey image_key(const uint8_t* data, size_t size, const PreprocessConfig& preprocess) {
  ImageKey key;
  key.digest = sha256(data, size);
  key.min_pixels = preprocess.min_pixels;
  key.max_pixels = preprocess.max_pixels;
  return key;
}

size_t image_features_bytes(const ImageFeatures& f) {
  size_t floats = f.vision.embeds.size();
  for (const auto& d : f.vision.deepstack) floats += d.size();
  return floats * sizeof(float) + sizeof(ImageFeatures);
}

std::shared_ptr<const ImageFeatures> ImageFeatureCache::find(const ImageKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->features;
}

void ImageFeatureCache::insert(const ImageKey& key, std::shared_ptr<const ImageFeatures> features) {
  const size_t bytes = image_features_bytes(*features);
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = index_.find(key); it != index_.end()) {
    stats_.bytes -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  if (bytes > budget_) return;
  lru_.push_front(Entry{key, std::move(features), bytes});
  index_[key] = lru_.begin();
  stats_.bytes += bytes;
  evict_over_budget();
}

void ImageFeatureCache::evict_over_budget() {
  while (stats_.bytes > budget_ && !lru_.empty()) {
    const Entry& last = lru_.back();
    stats_.bytes -= last.bytes;
    index_.erase(last.key);
    lru_.pop_back();
    ++stats_.evictions;
  }
}

ImageCacheStats ImageFeatureCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ImageCacheStats s = stats_;
  s.entries = lru_.size();
  s.budget_bytes = budget_;
  return s;
}

}  // namespace qvl
