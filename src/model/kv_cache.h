// Per-sequence key/value cache of the text decoder. It grows with the sequence instead of
// reserving the whole context up front, and stores fp32 (exact mode, the parity oracle), IEEE
// half (the default of the fast weight types: half the memory and half the bytes read per decode
// step at long contexts) or 8-bit blocks with a scale each (ops/kv_q8.h: 0.56x the bytes of
// half, for long contexts and many conversations); attention math stays fp32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "ops/attention.h"

namespace qvl {

enum class KVType { kF32, kF16, kQ8 };

// "f32", "f16" or "q8".
const char* kv_type_name(KVType type);
// Parses "f16" or "q8" (the types a user may choose; f32 comes with exact weights).
KVType parse_kv_type(const std::string& name);
// Bytes one position of one layer's keys (or values) takes: kv_width values in the type.
size_t kv_position_bytes(KVType type, int64_t kv_width);

// What the text decoder needs from one sequence's key/value storage: a contiguous growing cache
// (KVCache below) or pages of a shared pool (engine/kv_pool.h).
class KVSequence {
 public:
  virtual ~KVSequence() = default;
  virtual int64_t length() const = 0;  // committed positions
  virtual KVType type() const = 0;
  // Makes room for `extra` more positions.
  virtual void reserve_more(int64_t extra) = 0;
  // Stores n rows of keys and values [n, kv_width] at positions [length, length + n) of a layer
  // (converted to the cache's type). Needs reserve_more(n) first.
  virtual void write(int64_t layer, const float* keys, const float* values, int64_t n) = 0;
  // Causal attention of nq queries at positions [length + first, length + first + nq) over the
  // keys of a layer up to each query's own position (the rows just written included).
  virtual void attend(int64_t layer, const float* q, int64_t first, int64_t nq,
                      const ops::AttentionShape& shape, float* out) const = 0;
  // Called once per forward after every layer wrote its rows at [length, length + n).
  virtual void commit(int64_t n) = 0;
};

class KVCache final : public KVSequence {
 public:
  KVCache(int64_t num_layers, int64_t kv_width, KVType type = KVType::kF32)
      : layers_(num_layers), kv_width_(kv_width), type_(type) {}

  int64_t length() const override { return length_; }
  int64_t kv_width() const { return kv_width_; }  // n_kv_heads * head_dim
  KVType type() const override { return type_; }
  // Makes room for `extra` more positions (amortised doubling).
  void reserve_more(int64_t extra) override;
  void write(int64_t layer, const float* keys, const float* values, int64_t n) override;
  void attend(int64_t layer, const float* q, int64_t first, int64_t nq,
              const ops::AttentionShape& shape, float* out) const override;
  // Rows [0, length + n) of a layer; only the accessors of the cache's type are valid.
  const float* keys_f32(int64_t layer) const { return layers_[layer].k32.data(); }
  const float* values_f32(int64_t layer) const { return layers_[layer].v32.data(); }
  const uint16_t* keys_f16(int64_t layer) const { return layers_[layer].k16.data(); }
  const uint16_t* values_f16(int64_t layer) const { return layers_[layer].v16.data(); }
  const int8_t* keys_q8(int64_t layer) const { return layers_[layer].k8.data(); }
  const int8_t* values_q8(int64_t layer) const { return layers_[layer].v8.data(); }
  void commit(int64_t n) override { length_ += n; }
  // Forgets positions >= new_length (e.g. to reuse a shared prompt prefix).
  void truncate(int64_t new_length);
  size_t bytes() const;

 private:
  struct Layer {
    AlignedBuffer<float> k32, v32;
    AlignedBuffer<uint16_t> k16, v16;
    AlignedBuffer<int8_t> k8, v8;
  };
  std::vector<Layer> layers_;
  int64_t kv_width_;
  KVType type_;
  int64_t length_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace qvl
