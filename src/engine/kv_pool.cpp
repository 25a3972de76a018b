#include "engine/kv_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "ops/half_convert.h"
#include "ops/kv_q8.h"

namespace qvl {

KVPool::KVPool(int64_t num_layers, int64_t kv_heads, int64_t head_dim, KVType type,
               int64_t page_rows, size_t budget_bytes, bool prefix_caching)
    : num_layers_(num_layers),
      kv_heads_(kv_heads),
      head_dim_(head_dim),
      type_(type),
      page_rows_(page_rows),
      prefix_caching_(prefix_caching) {
  QVL_CHECK(num_layers > 0 && kv_heads > 0 && head_dim > 0 && page_rows > 0 && page_rows % 16 == 0);
  // 8-bit blocks must not straddle two heads (a head's rows are stored apart).
  QVL_CHECK(type != KVType::kQ8 || head_dim % ops::kKvQ8Block == 0);
  layer_bytes_ = static_cast<size_t>(page_rows) * position_bytes();
  page_bytes_ = layer_bytes_ * 2 * static_cast<size_t>(num_layers);
  const size_t count = budget_bytes / page_bytes_;
  if (count < 2) {
    fail(ErrorCode::kInvalidArgument,
         "the KV cache budget of " + std::to_string(budget_bytes >> 20) +
             " MiB holds fewer than 2 pages of " + std::to_string(page_bytes_ >> 10) + " KiB");
  }
  memory_bytes_ = count * page_bytes_;
  void* m = mmap(nullptr, memory_bytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    fail(ErrorCode::kResourceExhausted,
         "cannot reserve " + std::to_string(memory_bytes_ >> 20) + " MiB for the KV cache");
  }
  memory_ = static_cast<uint8_t*>(m);
  // 2 MiB pages where the system has them: a prompt's KV writes then fault ~500x less often
  // (4 KiB faults were 7% of a 512-token prefill in a VM; mapping a page in whole ahead of its
  // writes does not avoid them).
  advise_huge_pages(m, memory_bytes_);
  pages_.resize(count);
  free_.reserve(count);
  for (size_t i = count; i-- > 0;) free_.push_back(static_cast<int32_t>(i));
  free_count_ = static_cast<int64_t>(count);
  counters_.page_rows = page_rows_;
  counters_.page_bytes = page_bytes_;
}

KVPool::~KVPool() {
  if (memory_ != nullptr) munmap(memory_, memory_bytes_);
}

KVPoolStats KVPool::stats() const {
  KVPoolStats s = counters_;
  s.pages_total = total_pages();
  s.pages_cached = cached_idle_count_;
  s.pages_used = total_pages() - free_count_ - cached_idle_count_;
  return s;
}

uint8_t* KVPool::keys(int32_t page, int64_t layer) const {
  return memory_ + static_cast<size_t>(page) * page_bytes_ +
         static_cast<size_t>(layer) * 2 * layer_bytes_;
}

uint8_t* KVPool::values(int32_t page, int64_t layer) const {
  return keys(page, layer) + layer_bytes_;
}

void KVPool::lru_unlink(int32_t p) {
  Page& page = pages_[p];
  (page.lru_prev >= 0 ? pages_[page.lru_prev].lru_next : lru_head_) = page.lru_next;
  (page.lru_next >= 0 ? pages_[page.lru_next].lru_prev : lru_tail_) = page.lru_prev;
  page.lru_prev = page.lru_next = -1;
  --cached_idle_count_;
}

void KVPool::lru_push_front(int32_t p) {
  Page& page = pages_[p];
  page.lru_prev = -1;
  page.lru_next = lru_head_;
  if (lru_head_ >= 0) pages_[lru_head_].lru_prev = p;
  lru_head_ = p;
  if (lru_tail_ < 0) lru_tail_ = p;
  ++cached_idle_count_;
}

void KVPool::unindex(int32_t p) {
  Page& page = pages_[p];
  if (!page.indexed) return;
  if (page.full) {
    const auto it = full_index_.find(page.hash);
    if (it != full_index_.end() && it->second == p) full_index_.erase(it);
  }
  if (auto it = children_.find(page.parent); it != children_.end()) {
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), p), list.end());
    if (list.empty()) children_.erase(it);
  }
  page.indexed = page.full = false;
  page.keys.clear();
}

int32_t KVPool::allocate() {
  int32_t p = -1;
  if (!free_.empty()) {
    p = free_.back();
    free_.pop_back();
    --free_count_;
  } else if (lru_tail_ >= 0) {
    p = lru_tail_;
    lru_unlink(p);
    unindex(p);
    ++counters_.evictions;
  } else {
    return -1;
  }
  pages_[p].refs = 1;
  if (!pages_[p].written && map_whole_pages_) {
    // A page never used or given back (release_free_memory) would fault in 4 KiB at a time as
    // it is written, ~8 us each in a VM (~30 ms for a 14 MB page); one call maps it whole (~3 ms,
    // though the hypervisor still charges ~4 us per 4 KiB on first write: hence the warm pages
    // release_free_memory keeps).
    populate_pages_for_writing(memory_ + static_cast<size_t>(p) * page_bytes_, page_bytes_);
  }
  pages_[p].written = true;
  return p;
}

bool KVPool::warm_up(int64_t count, const std::function<bool()>& interrupted) {
  const auto sys_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // A request arriving meanwhile waits for one step at most (~2 ms in a VM).
  constexpr size_t kStep = size_t{1} << 20;
  const auto n =
      static_cast<size_t>(std::clamp<int64_t>(count, 0, static_cast<int64_t>(free_.size())));
  for (auto it = free_.end() - static_cast<std::ptrdiff_t>(n); it != free_.end(); ++it) {
    Page& page = pages_[*it];
    if (page.written) continue;
    uint8_t* memory = memory_ + static_cast<size_t>(*it) * page_bytes_;
    for (size_t begin = 0; begin < page_bytes_; begin += kStep) {
      if (interrupted && interrupted()) return false;
      const size_t bytes = std::min(kStep, page_bytes_ - begin);
      populate_pages_for_writing(memory + begin, bytes);
      // Populated pages still cost the hypervisor's first write each: pay it now. Their bytes
      // are zero (fresh or given back), so writing zeros changes nothing.
      for (size_t at = 0; at < bytes; at += sys_page) {
        static_cast<volatile uint8_t*>(memory + begin)[at] = 0;
      }
    }
    page.written = true;
  }
  return true;
}

size_t KVPool::release_free_memory(int64_t keep_warm) {
  // Pages are whole system pages unless page_bytes_ is odd-sized: round inwards then.
  const auto sys_page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  size_t released = 0;
  // allocate() takes free pages from the back.
  const auto kept =
      static_cast<size_t>(std::clamp<int64_t>(keep_warm, 0, static_cast<int64_t>(free_.size())));
  for (auto it = free_.begin(); it != free_.end() - static_cast<std::ptrdiff_t>(kept); ++it) {
    const int32_t p = *it;
    Page& page = pages_[p];
    if (!page.written) continue;
    page.written = false;
    const auto begin = reinterpret_cast<uintptr_t>(memory_ + static_cast<size_t>(p) * page_bytes_);
    const uintptr_t first = (begin + sys_page - 1) & ~(sys_page - 1);
    const uintptr_t last = (begin + page_bytes_) & ~(sys_page - 1);
    if (last <= first) continue;
    // MADV_DONTNEED: the next write faults in a zeroed page (contents never outlive a release).
    if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) == 0) {
      released += last - first;
    }
  }
  return released;
}

void KVPool::retain(int32_t p) {
  Page& page = pages_[p];
  if (page.refs == 0) {
    QVL_CHECK(page.indexed);  // only cached pages are reachable without a reference
    lru_unlink(p);
  }
  ++page.refs;
}

void KVPool::release(int32_t p) {
  Page& page = pages_[p];
  QVL_CHECK(page.refs > 0);
  if (--page.refs > 0) return;
  if (page.indexed) {
    lru_push_front(p);
  } else {
    free_.push_back(p);
    ++free_count_;
  }
}

uint64_t KVPool::chain_hash(uint64_t parent, const uint64_t* keys, int64_t n) {
  // splitmix64 steps over the parent and every key: a well-mixed 64-bit chain (hits are verified
  // against the stored keys, so a collision costs a miss, never a wrong answer).
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(parent + 0x9e3779b97f4a7c15ull);
  for (int64_t i = 0; i < n; ++i) h = mix(h ^ (keys[i] + 0x9e3779b97f4a7c15ull * (i + 1)));
  return h;
}

void KVPool::copy_rows(int32_t from, int32_t to, int64_t rows) {
  // The first `rows` rows of every head: one run per head (head-major) or for all of them.
  const int64_t runs = head_major() ? kv_heads_ : 1;
  const size_t bytes = static_cast<size_t>(rows) * (head_major() ? head_bytes() : position_bytes());
  for (int64_t layer = 0; layer < num_layers_; ++layer) {
    for (int64_t h = 0; h < runs; ++h) {
      const size_t at = static_cast<size_t>(h) * head_stride_bytes();
      std::memcpy(keys(to, layer) + at, keys(from, layer) + at, bytes);
      std::memcpy(values(to, layer) + at, values(from, layer) + at, bytes);
    }
  }
}

KVPool::Match KVPool::lookup(const uint64_t* keys, int64_t limit) {
  Match m;
  counters_.prefix_lookup_tokens += static_cast<uint64_t>(std::max<int64_t>(limit, 0));
  while (m.matched + page_rows_ <= limit) {
    const uint64_t h = chain_hash(m.chain, keys + m.matched, page_rows_);
    const auto it = full_index_.find(h);
    if (it == full_index_.end()) break;
    const Page& page = pages_[it->second];
    if (page.parent != m.chain ||
        !std::equal(page.keys.begin(), page.keys.end(), keys + m.matched)) {
      break;
    }
    retain(it->second);
    m.pages.push_back(it->second);
    m.chain = h;
    m.matched += page_rows_;
  }
  // The longest shared beginning among the indexed pages that follow this chain.
  int32_t best = -1;
  int64_t best_rows = 0;
  if (const auto it = children_.find(m.chain); it != children_.end()) {
    for (int32_t p : it->second) {
      const std::vector<uint64_t>& k = pages_[p].keys;
      const int64_t n = std::min<int64_t>(static_cast<int64_t>(k.size()), limit - m.matched);
      int64_t same = 0;
      while (same < n && k[same] == keys[m.matched + same]) ++same;
      if (same > best_rows) {
        best = p;
        best_rows = same;
      }
    }
  }
  if (best >= 0 && pages_[best].refs == 0 &&
      best_rows == static_cast<int64_t>(pages_[best].keys.size())) {
    // The prompt goes on from all the page holds and no sequence uses it (a chat's next turn): the
    // new sequence writes its rows after that content, in place of a copy into a fresh page
    // (~30 ms to map in a VM, most of a follow-up question's wait). The page stays indexed for
    // what it held; index_page records the longer content later.
    retain(best);
    m.pages.push_back(best);
    m.matched += best_rows;
  } else if (best >= 0) {
    retain(best);  // so allocate() cannot evict the page being copied
    const int32_t copy = allocate();
    if (copy >= 0) {
      copy_rows(best, copy, best_rows);
      m.pages.push_back(copy);
      m.matched += best_rows;
    }
    release(best);
  }
  counters_.prefix_hit_tokens += static_cast<uint64_t>(m.matched);
  return m;
}

void KVPool::index_page(int32_t p, uint64_t parent, const uint64_t* keys, int64_t rows) {
  Page& page = pages_[p];
  if (!prefix_caching_ || rows <= 0) return;
  if (page.indexed) {
    // A partial page taken over by a sequence that extends it (lookup): the longer content
    // replaces the shorter (the rows it had are unchanged).
    if (page.full || rows <= static_cast<int64_t>(page.keys.size())) return;
    unindex(p);
  }
  const bool full = rows == page_rows_;
  uint64_t hash = 0;
  if (full) {
    hash = chain_hash(parent, keys, rows);
    if (full_index_.count(hash)) return;  // the same content is cached already
    full_index_[hash] = p;
  } else if (const auto it = children_.find(parent); it != children_.end()) {
    for (int32_t other : it->second) {  // a partial page whose content another page contains
      const auto& k = pages_[other].keys;
      if (static_cast<int64_t>(k.size()) >= rows && std::equal(keys, keys + rows, k.begin())) {
        return;
      }
    }
  }
  page.indexed = true;
  page.full = full;
  page.parent = parent;
  page.hash = hash;
  page.keys.assign(keys, keys + rows);
  children_[parent].push_back(p);
}

// --- PagedSequence ---------------------------------------------------------------------------

void PagedSequence::adopt(KVPool::Match match) {
  QVL_CHECK(pages_.empty() && length_ == 0);
  pages_ = std::move(match.pages);
  length_ = match.matched;
  const int64_t full = match.matched / pool_.page_rows();
  // The chain hashes of the adopted full pages are recomputed from the keys on demand; only the
  // last one is needed to continue the chain.
  chain_.assign(static_cast<size_t>(full), 0);
  if (full > 0) chain_.back() = match.chain;
  indexed_full_ = full;
  QVL_CHECK(static_cast<int64_t>(keys_.size()) >= length_);
}

void PagedSequence::reserve_more(int64_t extra) {
  const int64_t need = pool_.pages_for(length_ + extra);
  while (static_cast<int64_t>(pages_.size()) < need) {
    const int32_t p = pool_.allocate();
    if (p < 0) {
      fail(ErrorCode::kResourceExhausted, "the KV cache is full (" +
                                              std::to_string(pool_.total_pages()) +
                                              " pages in use); try again later");
    }
    pages_.push_back(p);
  }
}

namespace {

// One kv head's row of n values as stored (8-bit blocks never straddle heads, so a head's row
// holds the same bytes as its part of the whole position's row would).
void store_head_row(KVType type, const float* x, int64_t n, uint8_t* out) {
  if (type == KVType::kF32) {
    std::memcpy(out, x, sizeof(float) * static_cast<size_t>(n));
  } else if (type == KVType::kF16) {
    ops::f32_to_f16_row(x, n, reinterpret_cast<uint16_t*>(out));
  } else {
    ops::quantize_kv_q8(x, n, reinterpret_cast<int8_t*>(out));
  }
}

}  // namespace

void PagedSequence::write(int64_t layer, const float* keys, const float* values, int64_t n) {
  const int64_t rows = pool_.page_rows(), width = pool_.kv_width();
  const int64_t heads = pool_.kv_heads(), d = pool_.head_dim();
  const size_t row_stride = pool_.row_stride_bytes(), head_stride = pool_.head_stride_bytes();
  // A prompt's positions in runs of at least 16 on the pool (each position's bytes are its own).
  ThreadPool::global().parallel_for(
      static_cast<size_t>(n),
      [&](size_t b, size_t e) {
        for (auto i = static_cast<int64_t>(b); i < static_cast<int64_t>(e); ++i) {
          const int64_t pos = length_ + i;
          const int32_t page = pages_[pos / rows];
          const size_t row_at = static_cast<size_t>(pos % rows) * row_stride;
          for (int64_t h = 0; h < heads; ++h) {
            const size_t at = static_cast<size_t>(h) * head_stride + row_at;
            store_head_row(pool_.type(), keys + i * width + h * d, d, pool_.keys(page, layer) + at);
            store_head_row(pool_.type(), values + i * width + h * d, d,
                           pool_.values(page, layer) + at);
          }
        }
      },
      16);
}

void PagedSequence::attend(int64_t layer, const float* q, int64_t first, int64_t nq,
                           const ops::AttentionShape& shape, float* out) const {
  const int64_t offset = length_ + first, nk = offset + nq;
  const int64_t used = pool_.pages_for(nk);
  k_ptrs_.resize(static_cast<size_t>(used));
  v_ptrs_.resize(static_cast<size_t>(used));
  for (int64_t i = 0; i < used; ++i) {
    k_ptrs_[i] = pool_.keys(pages_[i], layer);
    v_ptrs_[i] = pool_.values(pages_[i], layer);
  }
  ops::PagedKV kv;
  kv.page_rows = pool_.page_rows();
  // The pages' strides in elements (fp32, half) or bytes (8-bit).
  const size_t unit = pool_.type() == KVType::kF32   ? sizeof(float)
                      : pool_.type() == KVType::kF16 ? sizeof(uint16_t)
                                                     : 1;
  kv.row_stride = static_cast<int64_t>(pool_.row_stride_bytes() / unit);
  kv.head_stride = static_cast<int64_t>(pool_.head_stride_bytes() / unit);
  if (pool_.type() == KVType::kF32) {
    kv.k_pages = reinterpret_cast<const float* const*>(k_ptrs_.data());
    kv.v_pages = reinterpret_cast<const float* const*>(v_ptrs_.data());
  } else if (pool_.type() == KVType::kF16) {
    kv.k16_pages = reinterpret_cast<const uint16_t* const*>(k_ptrs_.data());
    kv.v16_pages = reinterpret_cast<const uint16_t* const*>(v_ptrs_.data());
  } else {
    kv.k8_pages = reinterpret_cast<const int8_t* const*>(k_ptrs_.data());
    kv.v8_pages = reinterpret_cast<const int8_t* const*>(v_ptrs_.data());
  }
  ops::attention(q, nq, kv, nk, shape, offset, out);
}

void PagedSequence::commit(int64_t n) {
  length_ += n;
  const int64_t rows = pool_.page_rows();
  QVL_CHECK(static_cast<int64_t>(keys_.size()) >= length_);
  while ((indexed_full_ + 1) * rows <= length_) {
    const uint64_t parent = indexed_full_ == 0 ? KVPool::kRootHash : chain_[indexed_full_ - 1];
    const uint64_t* k = keys_.data() + indexed_full_ * rows;
    pool_.index_page(pages_[indexed_full_], parent, k, rows);
    chain_.push_back(KVPool::chain_hash(parent, k, rows));
    ++indexed_full_;
  }
}

void PagedSequence::release() {
  const int64_t rows = pool_.page_rows();
  const int64_t tail = length_ - indexed_full_ * rows;
  if (tail > 0 && indexed_full_ < static_cast<int64_t>(pages_.size())) {
    const uint64_t parent = indexed_full_ == 0 ? KVPool::kRootHash : chain_[indexed_full_ - 1];
    pool_.index_page(pages_[indexed_full_], parent, keys_.data() + indexed_full_ * rows, tail);
  }
  for (int32_t p : pages_) pool_.release(p);
  pages_.clear();
  length_ = 0;
  indexed_full_ = 0;
  chain_.clear();
}

}  // namespace qvl
