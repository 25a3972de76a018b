// Rows of paged keys/values as fp32 and their packing into the flash tasks' panels (see
// attention_kernels.h).
#include <algorithm>
#include <vector>

#include "base/thread_pool.h"
#include "ops/attention_kernels.h"
#include "ops/half_convert.h"
#include "ops/kv_q8.h"

namespace qvl::ops::attention_kernels {
namespace {

// Row j of kv head kvh of keys (or values: the pages given) as fp32: the stored row, or a
// conversion into tmp. kv has its strides filled in.
const float* kv_row(const float* const* f32, const uint16_t* const* f16, const int8_t* const* q8,
                    const PagedKV& kv, int64_t j, int64_t kvh, const AttentionShape& s,
                    float* tmp) {
  const int64_t page = j / kv.page_rows;
  const int64_t at = (j % kv.page_rows) * kv.row_stride + kvh * kv.head_stride;
  if (f32 != nullptr) return f32[page] + at;
  if (f16 != nullptr) {
    f16_to_f32_row(f16[page] + at, s.head_dim, tmp);
  } else {
    dequantize_kv_q8(q8[page] + at, s.head_dim, tmp);
  }
  return tmp;
}
}  // namespace

const float* key_row(const PagedKV& kv, int64_t j, int64_t kvh, const AttentionShape& s,
                     float* tmp) {
  return kv_row(kv.k_pages, kv.k16_pages, kv.k8_pages, kv, j, kvh, s, tmp);
}
const float* value_row(const PagedKV& kv, int64_t j, int64_t kvh, const AttentionShape& s,
                       float* tmp) {
  return kv_row(kv.v_pages, kv.v16_pages, kv.v8_pages, kv, j, kvh, s, tmp);
}

// k [nk, n_kv_heads, d] -> panels [n_kv_heads, tiles, d, kKeyTile], zero-padded keys.
void pack_key_panels(const PagedKV& kv, int64_t nk, const AttentionShape& s, float* panels) {
  const int64_t d = s.head_dim, tiles = (nk + kKeyTile - 1) / kKeyTile;
  ThreadPool::global().parallel_for(
      static_cast<size_t>(s.n_kv_heads * tiles), [&](size_t b, size_t e) {
        std::vector<float> tmp(static_cast<size_t>(d));
        for (size_t index = b; index < e; ++index) {
          const int64_t kvh = static_cast<int64_t>(index) / tiles;
          const int64_t tile = static_cast<int64_t>(index) % tiles;
          float* panel = panels + (kvh * tiles + tile) * d * kKeyTile;
          const int64_t keys = std::min(kKeyTile, nk - tile * kKeyTile);
          for (int64_t jj = 0; jj < kKeyTile; ++jj) {
            if (jj >= keys) {
              for (int64_t c = 0; c < d; ++c) panel[c * kKeyTile + jj] = 0.0f;
              continue;
            }
            const float* row = key_row(kv, tile * kKeyTile + jj, kvh, s, tmp.data());
            for (int64_t c = 0; c < d; ++c) panel[c * kKeyTile + jj] = row[c];
          }
        }
      });
}

// v [nk, n_kv_heads, d] -> panels [n_kv_heads, d / kKeyTile, nk, kKeyTile].
void pack_value_panels(const PagedKV& kv, int64_t nk, const AttentionShape& s, float* panels) {
  const int64_t d = s.head_dim, n_panels = d / kKeyTile;
  ThreadPool::global().parallel_for(static_cast<size_t>(nk), [&](size_t b, size_t e) {
    std::vector<float> tmp(static_cast<size_t>(d));
    for (int64_t kvh = 0; kvh < s.n_kv_heads; ++kvh) {
      for (size_t j = b; j < e; ++j) {
        const float* src = value_row(kv, static_cast<int64_t>(j), kvh, s, tmp.data());
        for (int64_t x = 0; x < n_panels; ++x) {
          std::copy(src + x * kKeyTile, src + (x + 1) * kKeyTile,
                    panels + ((kvh * n_panels + x) * nk + static_cast<int64_t>(j)) * kKeyTile);
        }
      }
    }
  });
}

}  // namespace qvl::ops::attention_kernels
