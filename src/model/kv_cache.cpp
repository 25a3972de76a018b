#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "ops/half_convert.h"
#include "ops/kv_q8.h"

namespace qvl {

const char* kv_type_name(KVType type) {
  switch (type) {
    case KVType::kF32:
      return "f32";
    case KVType::kF16:
      return "f16";
    case KVType::kQ8:
      return "q8";
  }
  return "?";
}

KVType parse_kv_type(const std::string& name) {
  if (name == "f16") return KVType::kF16;
  if (name == "q8") return KVType::kQ8;
  fail(ErrorCode::kInvalidArgument, "unknown KV cache type '" + name + "' (use f16 or q8)");
}

size_t kv_position_bytes(KVType type, int64_t kv_width) {
  switch (type) {
    case KVType::kF32:
      return static_cast<size_t>(kv_width) * sizeof(float);
    case KVType::kF16:
      return static_cast<size_t>(kv_width) * sizeof(uint16_t);
    case KVType::kQ8:
      return static_cast<size_t>(ops::kv_q8_bytes(kv_width));
  }
  return 0;
}

void KVCache::reserve_more(int64_t extra) {
  const int64_t needed = length_ + extra;
  if (needed <= capacity_) return;
  const int64_t fresh = std::max<int64_t>(needed, std::max<int64_t>(64, capacity_ * 2));
  const auto count = static_cast<size_t>(fresh * kv_width_);
  for (auto& l : layers_) {
    if (type_ == KVType::kF32) {
      l.k32.resize(count);
      l.v32.resize(count);
    } else if (type_ == KVType::kF16) {
      l.k16.resize(count);
      l.v16.resize(count);
    } else {
      l.k8.resize(static_cast<size_t>(fresh) * kv_position_bytes(type_, kv_width_));
      l.v8.resize(static_cast<size_t>(fresh) * kv_position_bytes(type_, kv_width_));
    }
  }
  capacity_ = fresh;
}

void KVCache::write(int64_t layer, const float* keys, const float* values, int64_t n) {
  QVL_CHECK(layer >= 0 && layer < static_cast<int64_t>(layers_.size()) && n >= 0 &&
            length_ + n <= capacity_);
  Layer& l = layers_[layer];
  const int64_t at = length_ * kv_width_, count = n * kv_width_;
  if (type_ == KVType::kF32) {
    std::memcpy(l.k32.data() + at, keys, sizeof(float) * count);
    std::memcpy(l.v32.data() + at, values, sizeof(float) * count);
  } else if (type_ == KVType::kF16) {
    ops::f32_to_f16_row(keys, count, l.k16.data() + at);
    ops::f32_to_f16_row(values, count, l.v16.data() + at);
  } else {
    const size_t byte_at = static_cast<size_t>(length_) * kv_position_bytes(type_, kv_width_);
    ops::quantize_kv_q8(keys, count, l.k8.data() + byte_at);
    ops::quantize_kv_q8(values, count, l.v8.data() + byte_at);
  }
}

void KVCache::attend(int64_t layer, const float* q, int64_t first, int64_t nq,
                     const ops::AttentionShape& shape, float* out) const {
  const int64_t offset = length_ + first, nk = offset + nq;
  if (type_ == KVType::kF32) {
    ops::attention(q, nq, keys_f32(layer), values_f32(layer), nk, shape, offset, out);
  } else if (type_ == KVType::kF16) {
    ops::attention(q, nq, keys_f16(layer), values_f16(layer), nk, shape, offset, out);
  } else {
    ops::attention(q, nq, keys_q8(layer), values_q8(layer), nk, shape, offset, out);
  }
}

void KVCache::truncate(int64_t new_length) {
  QVL_CHECK(new_length >= 0 && new_length <= length_);
  length_ = new_length;
}

size_t KVCache::bytes() const {
  return static_cast<size_t>(capacity_) * kv_position_bytes(type_, kv_width_) * 2 * layers_.size();
}

}  // namespace qvl
