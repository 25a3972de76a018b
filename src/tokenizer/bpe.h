// Byte-level BPE model: raw bytes of one pre-token in, token ids out. Merges are applied by rank
// (lowest first, leftmost on ties), exactly as Hugging Face tokenizers does. Results for short
// words are cached, so repeated words cost one hash lookup.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qvl {

class BpeModel {
 public:
  struct Merge {
    int32_t left;
    int32_t right;
    int32_t merged;
  };

  // `byte_ids[b]` is the token of the single byte b; `merges` are in rank order (index = rank).
  // Throws Error(kCorrupt) if a byte has no token.
  BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<Merge>& merges);

  // Appends the tokens of `word` (raw bytes, non-empty) to `out`. Thread-safe.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  size_t merge_count() const { return merge_count_; }

 private:
  // Open-addressing map from a (left, right) pair to (rank << 32 | merged id).
  struct PairTable {
    std::vector<uint64_t> keys;
    std::vector<uint64_t> values;
    uint64_t mask = 0;
    void build(const std::vector<Merge>& merges);
    bool find(int32_t left, int32_t right, uint32_t& rank, int32_t& merged) const;
  };

  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  std::array<int32_t, 256> byte_ids_;
  PairTable pairs_;
  size_t merge_count_ = 0;

  static constexpr size_t kMaxCachedWordBytes = 128;
  static constexpr size_t kMaxCacheEntries = 1 << 17;
  mutable std::mutex cache_mutex_;
  struct WordHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::unordered_map<std::string, std::vector<int32_t>, WordHash, std::equal_to<>> cache_;
};

}  // namespace qvl
