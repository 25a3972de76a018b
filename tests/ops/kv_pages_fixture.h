// Keys or values scattered into pages of any layout ops::PagedKV describes, for the paged
// attention tests: pages in shuffled slots of a pool, every unit no row owns (spare slots, tail
// rows, gaps between strided rows) holding a poison value, so a kernel reading where it should
// not shows in its output.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace qvl::ops::testing {

// Where position p of a page and kv head h start, in units (elements, or bytes for 8-bit).
struct PageStrides {
  int64_t row = 0, head = 0;
};
enum class PageOrder { kPositionMajor, kHeadMajor };
// The strides of a page of page_rows positions of `heads` rows of head_units each, with `gap`
// poisoned units after every head row.
inline PageStrides page_strides(PageOrder order, int64_t page_rows, int64_t heads,
                                int64_t head_units, int64_t gap) {
  const int64_t unit = head_units + gap;
  return order == PageOrder::kPositionMajor ? PageStrides{heads * unit, unit}
                                            : PageStrides{unit, page_rows * unit};
}

template <typename T>
struct PagePool {
  std::vector<T> storage;
  std::vector<const T*> pages;
};

// rows: [nk][heads][head_units] contiguous.
template <typename T>
PagePool<T> scatter_pages(const std::vector<T>& rows, int64_t nk, int64_t heads, int64_t head_units,
                          int64_t page_rows, PageStrides strides, T poison, uint32_t seed) {
  const int64_t n_pages = (nk + page_rows - 1) / page_rows, slots = n_pages + 2;
  const int64_t page_units =
      std::max((page_rows - 1) * strides.row + (heads - 1) * strides.head, int64_t{0}) + head_units;
  PagePool<T> pool;
  pool.storage.assign(static_cast<size_t>(slots * page_units), poison);
  std::vector<int64_t> slot(static_cast<size_t>(slots));
  for (int64_t i = 0; i < slots; ++i) slot[static_cast<size_t>(i)] = i;
  std::shuffle(slot.begin(), slot.end(), std::mt19937(seed));
  for (int64_t x = 0; x < n_pages; ++x) {
    T* page = pool.storage.data() + slot[static_cast<size_t>(x)] * page_units;
    for (int64_t j = x * page_rows; j < std::min(nk, (x + 1) * page_rows); ++j) {
      for (int64_t h = 0; h < heads; ++h) {
        const auto src = rows.begin() + (j * heads + h) * head_units;
        std::copy(src, src + head_units,
                  page + (j - x * page_rows) * strides.row + h * strides.head);
      }
    }
    pool.pages.push_back(page);
  }
  return pool;
}

}  // namespace qvl::ops::testing
