// The 8-bit KV cache's storage: values in blocks of 32, each block 32 int8 then its fp32 scale
// (36 bytes, 0.5625x the bytes of half). A block never straddles two heads when head_dim is a
// multiple of 32, so one head's row is a run of whole blocks and needs no other bookkeeping.
#pragma once

#include <cstdint>

namespace qvl::ops {

inline constexpr int64_t kKvQ8Block = 32;       // values per block
inline constexpr int64_t kKvQ8BlockBytes = 36;  // 32 int8 + one fp32 scale

// Bytes of n values (n a multiple of kKvQ8Block).
inline constexpr int64_t kv_q8_bytes(int64_t n) {
  return n / kKvQ8Block * kKvQ8BlockBytes;
}

// Symmetric per-block quantization: scale = max|x| / 127, q = round(x / scale). n is a multiple of
// kKvQ8Block. Non-finite inputs never produce out-of-range codes.
void quantize_kv_q8(const float* x, int64_t n, int8_t* out);
void dequantize_kv_q8(const int8_t* in, int64_t n, float* out);

}  // namespace qvl::ops
