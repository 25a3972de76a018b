#include "kv_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <random>

#include "base/thread_pool.h"
#include "ops/half_convert.h"
#include "ops/kv_q8.h"
#include "ops/machine_probe_kernels.h"
#include "ops/x86/machine_probe_x86.h"
#include "ops/packed_matrix.h"

namespace qvl::bench {

PagedKVCache::PagedKVCache(const KVPageLayout& l, int64_t nk_, bool q8_)
    : layout(l), q8(q8_), nk(nk_) {
  const int64_t width = kKVHeads * kKVHeadDim, rows = layout.page_rows;
  head_row = q8 ? ops::kv_q8_bytes(kKVHeadDim) : kKVHeadDim;
  row_bytes = q8 ? ops::kv_q8_bytes(width) : width * 2;
  layer_bytes = rows * row_bytes;
  const int64_t page_bytes = 2 * kKVLayers * layer_bytes;
  const int64_t pages = (nk + rows - 1) / rows;
  pool = AlignedBuffer<uint8_t>(static_cast<size_t>(pages * page_bytes));
  if (layout.huge_pages) {  // the whole 2 MiB pages inside the buffer (before the first touch)
    constexpr uintptr_t kHuge = uintptr_t{1} << 21;
    const auto begin = reinterpret_cast<uintptr_t>(pool.data());
    const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t end = (begin + static_cast<uintptr_t>(pages * page_bytes)) & ~(kHuge - 1);
    if (end > first) madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);
  }
  // One random block repeated (the speed does not depend on which numbers or where they are).
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> block(static_cast<size_t>(rows * width));
  for (auto& v : block) v = dist(rng);
  std::vector<uint8_t> coded(static_cast<size_t>(layer_bytes));
  if (q8) {
    ops::quantize_kv_q8(block.data(), rows * width, reinterpret_cast<int8_t*>(coded.data()));
  } else {
    ops::f32_to_f16_row(block.data(), rows * width, reinterpret_cast<uint16_t*>(coded.data()));
  }
  for (int64_t x = 0; x < pages * 2 * kKVLayers; ++x) {
    std::copy(coded.begin(), coded.end(), pool.data() + x * layer_bytes);
  }
  std::vector<int64_t> slot(static_cast<size_t>(pages));
  for (int64_t x = 0; x < pages; ++x) slot[static_cast<size_t>(x)] = x;
  std::shuffle(slot.begin(), slot.end(), std::mt19937(7));
  // Page tables per layer, as PagedSequence::attend builds them.
  k_ptrs.resize(kKVLayers);
  v_ptrs.resize(kKVLayers);
  for (int64_t layer = 0; layer < kKVLayers; ++layer) {
    for (int64_t x = 0; x < pages; ++x) {
      const uint8_t* page = pool.data() + slot[static_cast<size_t>(x)] * page_bytes;
      k_ptrs[static_cast<size_t>(layer)].push_back(page + 2 * layer * layer_bytes);
      v_ptrs[static_cast<size_t>(layer)].push_back(page + (2 * layer + 1) * layer_bytes);
    }
  }
}

ops::PagedKV PagedKVCache::layer(int64_t l) const {
  ops::PagedKV kv;
  kv.page_rows = layout.page_rows;
  if (layout.head_major) {
    kv.row_stride = head_row;
    kv.head_stride = layout.page_rows * head_row;
  }
  const auto i = static_cast<size_t>(l);
  if (q8) {
    kv.k8_pages = reinterpret_cast<const int8_t* const*>(k_ptrs[i].data());
    kv.v8_pages = reinterpret_cast<const int8_t* const*>(v_ptrs[i].data());
  } else {
    kv.k16_pages = reinterpret_cast<const uint16_t* const*>(k_ptrs[i].data());
    kv.v16_pages = reinterpret_cast<const uint16_t* const*>(v_ptrs[i].data());
  }
  return kv;
}

uint64_t PagedKVCache::read_layer(int64_t l) const {
  const auto& kp = k_ptrs[static_cast<size_t>(l)];
  const auto& vp = v_ptrs[static_cast<size_t>(l)];
  const size_t pages = kp.size();
  const auto read = ops::active_isa() >= ops::IsaLevel::kAvx2 ? ops::probe_kernels::read_sum_avx2
                                                              : ops::probe_kernels::read_sum_scalar;
  std::vector<uint64_t> sums(2 * pages);
  ThreadPool::global().parallel_for(2 * pages, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const auto* page = static_cast<const uint8_t*>(i < pages ? kp[i] : vp[i - pages]);
      sums[i] = read(page, static_cast<size_t>(layer_bytes));
    }
  });
  uint64_t total = 0;
  for (const uint64_t x : sums) total += x;
  return total;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace qvl::bench
