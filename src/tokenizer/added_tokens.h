// Finds added/special tokens (tokenizer.json "added_tokens") in raw text before BPE runs:
// leftmost match first and, among matches starting there, the longest (like Hugging Face's
// Aho-Corasick LeftmostLongest).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qvl {

class AddedTokenMatcher {
 public:
  struct Match {
    size_t begin = 0;
    size_t length = 0;
    int32_t id = -1;
  };

  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<std::pair<std::string, int32_t>>& tokens);

  // The first match at or after `from`, or a Match with id -1.
  Match find(std::string_view text, size_t from) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token_id = -1;
  };
  int32_t child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_{Node{}};
  std::array<bool, 256> first_byte_{};
};

}  // namespace qvl
