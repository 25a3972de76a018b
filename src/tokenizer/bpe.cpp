#include "tokenizer/bpe.h"

#include <algorithm>

#include "base/error.h"

namespace qvl {

namespace {

constexpr uint64_t kEmptyKey = ~uint64_t{0};

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser: cheap and spreads sequential ids well
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

void BpeModel::PairTable::build(const std::vector<Merge>& merges) {
  size_t capacity = 16;
  while (capacity < merges.size() * 2) capacity <<= 1;
  keys.assign(capacity, kEmptyKey);
  values.assign(capacity, 0);
  mask = capacity - 1;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Merge& m = merges[rank];
    const uint64_t key = pair_key(m.left, m.right);
    size_t slot = mix(key) & mask;
    while (keys[slot] != kEmptyKey && keys[slot] != key) slot = (slot + 1) & mask;
    if (keys[slot] == key) continue;  // a duplicate merge keeps its first (lowest) rank
    keys[slot] = key;
    values[slot] = (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(m.merged);
  }
}

bool BpeModel::PairTable::find(int32_t left, int32_t right, uint32_t& rank, int32_t& merged) const {
  const uint64_t key = pair_key(left, right);
  for (size_t slot = mix(key) & mask;; slot = (slot + 1) & mask) {
    if (keys[slot] == key) {
      rank = static_cast<uint32_t>(values[slot] >> 32);
      merged = static_cast<int32_t>(values[slot] & 0xFFFFFFFFu);
      return true;
    }
    if (keys[slot] == kEmptyKey) return false;
  }
}

BpeModel::BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<Merge>& merges)
    : byte_ids_(byte_ids), merge_count_(merges.size()) {
  for (int b = 0; b < 256; ++b) {
    if (byte_ids_[b] < 0) {
      fail(ErrorCode::kCorrupt, "BPE vocabulary has no token for byte " + std::to_string(b));
    }
  }
  pairs_.build(merges);
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() == 1) {
    out.push_back(byte_ids_[static_cast<uint8_t>(word[0])]);
    return;
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();  // bounded memory, simple policy
    cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + first, out.end()));
  }
}

// Symbols form a linked list over the word's bytes; candidate merges wait in a min-heap ordered
// by (rank, position). Entries made stale by earlier merges are skipped when popped.
void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  struct Candidate {
    uint32_t rank;
    int pos;
    int32_t left;
    int32_t right;
    int32_t merged;
    // Min-heap order for std::push_heap: lowest rank first, then leftmost.
    bool operator<(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  // Per-thread scratch space: no allocation per word once warmed up.
  thread_local std::vector<int32_t> id;
  thread_local std::vector<int> prev, next;
  thread_local std::vector<Candidate> heap;
  const int n = static_cast<int>(word.size());
  id.resize(n);
  prev.resize(n);
  next.resize(n);
  heap.clear();
  for (int i = 0; i < n; ++i) {
    id[i] = byte_ids_[static_cast<uint8_t>(word[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  auto push_pair = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    uint32_t rank;
    int32_t merged;
    if (pairs_.find(id[pos], id[next[pos]], rank, merged)) {
      heap.push_back({rank, pos, id[pos], id[next[pos]], merged});
      std::push_heap(heap.begin(), heap.end());
    }
  };
  for (int i = 0; i + 1 < n; ++i) push_pair(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate c = heap.back();
    heap.pop_back();
    const int right = next[c.pos];
    // id[pos] == -1 marks a symbol absorbed by its left neighbour.
    if (id[c.pos] != c.left || right < 0 || id[right] != c.right) continue;
    id[c.pos] = c.merged;
    id[right] = -1;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push_pair(prev[c.pos]);
    push_pair(c.pos);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
  if (n > (1 << 16)) {  // do not keep scratch space of a huge word alive in the thread
    for (auto* v : {&prev, &next}) std::vector<int>().swap(*v);
    std::vector<int32_t>().swap(id);
    std::vector<Candidate>().swap(heap);
  }
}

}  // namespace qvl
