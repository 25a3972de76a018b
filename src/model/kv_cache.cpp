#include "model/kv_cache.h"

#include <algorithm>

#include "base/error.h"

namespace qvl {

void KVCache::reserve_more(int64_t extra) {
  const int64_t needed = length_ + extra;
  if (needed <= capacity_) return;
  const int64_t fresh = std::max<int64_t>(needed, std::max<int64_t>(64, capacity_ * 2));
  for (auto& l : layers_) {
    l.k.resize(static_cast<size_t>(fresh * kv_width_));
    l.v.resize(static_cast<size_t>(fresh * kv_width_));
  }
  capacity_ = fresh;
}

void KVCache::truncate(int64_t new_length) {
  QVL_CHECK(new_length >= 0 && new_length <= length_);
  length_ = new_length;
}

size_t KVCache::bytes() const {
  return static_cast<size_t>(capacity_ * kv_width_) * 2 * sizeof(float) * layers_.size();
}

}  // namespace qvl
