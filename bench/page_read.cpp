#include "page_read.h"

#include <algorithm>

#include "base/thread_pool.h"
#include "ops/machine_probe_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::bench {

uint64_t read_pages(const std::vector<const void*>& k_pages,
                    const std::vector<const void*>& v_pages, size_t bytes) {
  const size_t pages = k_pages.size();
  const auto read = ops::active_isa() >= ops::IsaLevel::kAvx2 ? ops::probe_kernels::read_sum_avx2
                                                              : ops::probe_kernels::read_sum_scalar;
  std::vector<uint64_t> sums(2 * pages);
  ThreadPool::global().parallel_for(2 * pages, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const auto* page = static_cast<const uint8_t*>(i < pages ? k_pages[i] : v_pages[i - pages]);
      sums[i] = read(page, bytes);
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
