// Shared by the decode attention benchmarks: the 2B text model's KV cache (28 layers, 8 kv heads of
// 128) at a context, in pages of a given layout handed out in shuffled order as a pool does, its
// page tables per layer, and a plain read of a layer's pages (the ceiling an attention call over
// the same pages is compared with).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"
#include "ops/attention.h"

namespace qvl::bench {

inline constexpr int64_t kKVLayers = 28, kKVHeads = 8, kKVHeadDim = 128;

struct KVPageLayout {
  int64_t page_rows;
  bool head_major;  // [kv heads][page_rows][head row] instead of [page_rows][kv heads][head row]
  bool huge_pages;  // the pool asks for transparent huge pages (madvise)
};
// As engine/kv_pool lays pages out: 128 positions, 8-bit ones head-major.
inline KVPageLayout engine_kv_layout(bool q8) {
  return {128, q8, false};
}

struct PagedKVCache {
  PagedKVCache(const KVPageLayout& layout, int64_t nk, bool q8);
  ops::PagedKV layer(int64_t l) const;
  // Reads layer l's K and V pages with every pool thread (the machine probe's loop); returns a
  // checksum so the reads stay.
  uint64_t read_layer(int64_t l) const;

  KVPageLayout layout;
  bool q8;
  int64_t nk, row_bytes, layer_bytes;  // a position of one layer's K (or V); K of a layer's page
  int64_t head_row;                    // one head's row: elements (half) or bytes (8-bit)
  AlignedBuffer<uint8_t> pool;
  std::vector<std::vector<const void*>> k_ptrs, v_ptrs;
};

double median(std::vector<double> v);

}  // namespace qvl::bench
