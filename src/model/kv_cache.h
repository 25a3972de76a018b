// Per-sequence key/value cache of the text decoder. It grows with the sequence instead of
// reserving the whole context up front.
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"

namespace qvl {

class KVCache {
 public:
  KVCache(int64_t num_layers, int64_t kv_width) : layers_(num_layers), kv_width_(kv_width) {}

  int64_t length() const { return length_; }
  int64_t kv_width() const { return kv_width_; }  // n_kv_heads * head_dim
  // Makes room for `extra` more positions (amortised doubling).
  void reserve_more(int64_t extra);
  float* keys(int64_t layer) { return layers_[layer].k.data(); }
  float* values(int64_t layer) { return layers_[layer].v.data(); }
  // Called once per forward after every layer wrote its rows at [length, length + n).
  void commit(int64_t n) { length_ += n; }
  // Forgets positions >= new_length (e.g. to reuse a shared prompt prefix).
  void truncate(int64_t new_length);
  size_t bytes() const;

 private:
  struct Layer {
    AlignedBuffer<float> k, v;
  };
  std::vector<Layer> layers_;
  int64_t kv_width_;
  int64_t length_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace qvl
