// Keys and values for the decode attention tests, in each storage the KV cache has.
#pragma once

#include <cstdint>
#include <vector>

#include "base/half.h"
#include "isa_test_util.h"
#include "ops/kv_q8.h"
#include "ops/packed_kernels.h"

namespace qvl::ops::testing {

enum class Storage { kF32, kF16, kQ8 };
inline const char* storage_name(Storage storage) {
  return storage == Storage::kF32 ? "fp32" : storage == Storage::kF16 ? "half" : "8-bit";
}

// Keys and values [nk, n_kv_heads, head_dim] in one storage (rows of row_elems elements or
// bytes), plus the fp32 numbers they hold (the reference's input).
struct Cache {
  std::vector<float> k, v;
  std::vector<uint16_t> k16, v16;
  std::vector<int8_t> k8, v8;
  Storage storage;
};

inline Cache make_cache(int64_t nk, int64_t row_elems, Storage storage, uint32_t seed) {
  Cache c;
  c.storage = storage;
  c.k = random_vector(static_cast<size_t>(nk * row_elems), seed, 1.0f);
  c.v = random_vector(static_cast<size_t>(nk * row_elems), seed + 1, 1.0f);
  if (storage == Storage::kF16) {
    c.k16.resize(c.k.size());
    c.v16.resize(c.v.size());
    for (size_t i = 0; i < c.k.size(); ++i) {
      c.k16[i] = kernels::f32_to_f16(c.k[i]);
      c.v16[i] = kernels::f32_to_f16(c.v[i]);
      c.k[i] = f16_to_f32(c.k16[i]);
      c.v[i] = f16_to_f32(c.v16[i]);
    }
  } else if (storage == Storage::kQ8) {
    c.k8.resize(static_cast<size_t>(kv_q8_bytes(nk * row_elems)));
    c.v8.resize(c.k8.size());
    quantize_kv_q8(c.k.data(), nk * row_elems, c.k8.data());
    quantize_kv_q8(c.v.data(), nk * row_elems, c.v8.data());
    dequantize_kv_q8(c.k8.data(), nk * row_elems, c.k.data());
    dequantize_kv_q8(c.v8.data(), nk * row_elems, c.v.data());
  }
  return c;
}

}  // namespace qvl::ops::testing
