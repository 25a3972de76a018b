// The KV cache of all sequences: fixed-size pages from one pool with a byte budget, and an index of
// the pages' contents so a new request whose prompt starts like an earlier one (turn 2 of a chat, a
// shared system prompt, the same document asked again) reuses their keys and values.
//
// A page holds page_rows positions of every layer: for each layer K then V, each position-major
// [page_rows][kv_heads][head row] for fp32/half, head-major [kv_heads][page_rows][head row] for
// 8-bit (a kv head's rows contiguous, which decode attention streams faster for 8-bit and slower
// for half; bench/kv_layout_bench.cpp), passed to ops::attention as page strides.
// Its content is named by the chain of token keys before and in it (token ids; image pads carry
// their image's digest, so the same text with another picture never matches). Full pages are
// indexed by their chain hash and shared read-only between sequences; a finished sequence's last,
// partly filled page is indexed too: a new sequence that goes on from all of it takes it over if
// no one else uses it (a chat's next turn), and one that shares only part of it (or while another
// sequence holds it) copies the rows it shares into a page of its own. Pages no sequence uses stay
// cached until the pool needs them, least recently used first. Hash hits are verified against the
// stored keys. The pool is not thread-safe: the scheduler owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "model/kv_cache.h"

namespace qvl {

struct KVPoolStats {
  int64_t pages_total = 0;
  int64_t pages_used = 0;    // held by a running sequence
  int64_t pages_cached = 0;  // unused but holding reusable content
  int64_t page_rows = 0;
  size_t page_bytes = 0;
  uint64_t prefix_hit_tokens = 0;     // prompt positions reused instead of computed
  uint64_t prefix_lookup_tokens = 0;  // prompt positions looked up
  uint64_t evictions = 0;
};

class KVPool {
 public:
  // Throws Error(kInvalidArgument) if the budget holds fewer than 2 pages. Without prefix caching
  // nothing is indexed: lookups find nothing and released pages are free at once (and, last in
  // first out, the next to be handed out, so resident memory stays at what is in use).
  KVPool(int64_t num_layers, int64_t kv_heads, int64_t head_dim, KVType type, int64_t page_rows,
         size_t budget_bytes, bool prefix_caching = true);
  ~KVPool();
  KVPool(const KVPool&) = delete;
  KVPool& operator=(const KVPool&) = delete;

  int64_t num_layers() const { return num_layers_; }
  int64_t kv_width() const { return kv_heads_ * head_dim_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  KVType type() const { return type_; }
  int64_t page_rows() const { return page_rows_; }
  bool prefix_caching() const { return prefix_caching_; }
  int64_t total_pages() const { return static_cast<int64_t>(pages_.size()); }
  // Pages that can be handed out now: free ones plus cached ones nobody uses.
  int64_t available_pages() const { return free_count_ + cached_idle_count_; }
  int64_t pages_for(int64_t positions) const { return (positions + page_rows_ - 1) / page_rows_; }
  KVPoolStats stats() const;

  // Storage of a layer's keys / values in a page: page_rows positions of position_bytes() each,
  // row r of kv head h at r * row_stride_bytes() + h * head_stride_bytes().
  uint8_t* keys(int32_t page, int64_t layer) const;
  uint8_t* values(int32_t page, int64_t layer) const;
  bool head_major() const { return type_ == KVType::kQ8; }
  size_t row_stride_bytes() const { return head_major() ? head_bytes() : position_bytes(); }
  size_t head_stride_bytes() const {
    return head_major() ? static_cast<size_t>(page_rows_) * head_bytes() : head_bytes();
  }
  // Bytes of one position of one layer's keys (or values), and of one kv head's part of it.
  size_t position_bytes() const { return kv_position_bytes(type_, kv_width()); }
  size_t head_bytes() const { return kv_position_bytes(type_, head_dim_); }

  // A page for a sequence's exclusive use (reference count 1), evicting the least recently used
  // idle cached page if no free page is left; -1 if every page is in use.
  int32_t allocate();
  void retain(int32_t page);
  // Drops a reference; an unreferenced page stays cached if indexed, else becomes free.
  void release(int32_t page);
  // Returns the memory of free pages written since the last call to the system (cached pages
  // keep theirs) except the keep_warm pages allocated next: the scheduler calls it when it goes
  // idle, so a finished request's KV does not stay resident beside the next request's images,
  // while the next request's first pages need not be mapped in again (see allocate). Returns the
  // bytes given back.
  size_t release_free_memory(int64_t keep_warm = 0);
  // Maps in and writes the `count` free pages allocated next, if not yet: the scheduler does it
  // when idle, so that a new request (a chat's next question) does not pay the first write of a
  // fresh page (~15-30 ms for a 14 MiB page in a VM). Stops early, returning false, when
  // `interrupted` (asked before each MiB) says so: a request has arrived.
  bool warm_up(int64_t count, const std::function<bool()>& interrupted = {});
  // Whether allocate() maps a page that is not resident in whole at once (one call instead of a
  // fault per 4 KiB as it is written; the price: a sequence's last page is resident in full).
  void set_map_whole_pages(bool whole) { map_whole_pages_ = whole; }

  // Chain hash of a full page whose predecessors hash to `parent`.
  static uint64_t chain_hash(uint64_t parent, const uint64_t* keys, int64_t n);
  static constexpr uint64_t kRootHash = 0x9e3779b97f4a7c15ull;

  // Prefix lookup over keys[0, limit): retains and returns the indexed full pages that match, then
  // the longest partial match of the next page (if any): that page itself when the keys cover
  // all it holds and no one uses it, else a newly allocated copy of the matching rows.
  // `matched` is the number of positions covered; `chain` the hash after the last full page.
  struct Match {
    std::vector<int32_t> pages;
    int64_t matched = 0;
    uint64_t chain = kRootHash;
  };
  Match lookup(const uint64_t* keys, int64_t limit);

  // Indexes a page a sequence filled: full (rows == page_rows, hash = chain_hash(parent, keys))
  // or the partly filled last page of a finished sequence. Content already indexed is skipped; a
  // taken-over partial page's index grows to the rows given.
  void index_page(int32_t page, uint64_t parent, const uint64_t* keys, int64_t rows);

 private:
  struct Page {
    int32_t refs = 0;
    bool indexed = false;
    bool full = false;
    bool written = false;  // handed out since its memory was last given back
    uint64_t parent = 0;
    uint64_t hash = 0;                     // chain hash when full
    std::vector<uint64_t> keys;            // the indexed content
    int32_t lru_prev = -1, lru_next = -1;  // idle cached pages, most recent at the head
  };
  void lru_unlink(int32_t page);
  void lru_push_front(int32_t page);
  void unindex(int32_t page);
  void copy_rows(int32_t from, int32_t to, int64_t rows);

  int64_t num_layers_, kv_heads_, head_dim_;
  KVType type_;
  int64_t page_rows_;
  bool prefix_caching_;
  size_t layer_bytes_ = 0;  // K or V of one layer in one page
  size_t page_bytes_ = 0;
  uint8_t* memory_ = nullptr;  // an anonymous mapping: pages become resident when first written
  size_t memory_bytes_ = 0;
  std::vector<Page> pages_;
  bool map_whole_pages_ = false;
  std::vector<int32_t> free_;
  int64_t free_count_ = 0;
  int64_t cached_idle_count_ = 0;
  int32_t lru_head_ = -1, lru_tail_ = -1;
  std::unordered_map<uint64_t, int32_t> full_index_;             // chain hash -> page
  std::unordered_map<uint64_t, std::vector<int32_t>> children_;  // parent hash -> pages
  KVPoolStats counters_;
};

// One sequence's keys and values in pages of a pool.
class PagedSequence final : public KVSequence {
 public:
  explicit PagedSequence(KVPool& pool) : pool_(pool) {}
  ~PagedSequence() override { release(); }
  PagedSequence(const PagedSequence&) = delete;
  PagedSequence& operator=(const PagedSequence&) = delete;

  // Starts from a prefix match (takes over its page references).
  void adopt(KVPool::Match match);
  // Token keys of positions about to be written: append before the forward that writes them, so
  // pages can be indexed once full.
  void push_keys(const uint64_t* keys, int64_t n) { keys_.insert(keys_.end(), keys, keys + n); }

  int64_t length() const override { return length_; }
  KVType type() const override { return pool_.type(); }
  // Throws Error(kResourceExhausted) if the pool has no page left.
  void reserve_more(int64_t extra) override;
  void write(int64_t layer, const float* keys, const float* values, int64_t n) override;
  void attend(int64_t layer, const float* q, int64_t first, int64_t nq,
              const ops::AttentionShape& shape, float* out) const override;
  void commit(int64_t n) override;
  // After a speculative forward, whose rows were written but not committed (the caller commits
  // the accepted ones): forgets the keys of the rest; their rows are overwritten by the next one.
  void forget_uncommitted() { keys_.resize(static_cast<size_t>(length_)); }
  // Gives the pages back to the pool, indexing the partly filled last one. Idempotent.
  void release();
  int64_t pages() const { return static_cast<int64_t>(pages_.size()); }

 private:
  KVPool& pool_;
  std::vector<int32_t> pages_;
  std::vector<uint64_t> keys_;
  std::vector<uint64_t> chain_;  // chain hash after each full page
  int64_t length_ = 0;
  int64_t indexed_full_ = 0;  // leading full pages already offered to the index
  mutable std::vector<const void*> k_ptrs_, v_ptrs_;
};

}  // namespace qvl
