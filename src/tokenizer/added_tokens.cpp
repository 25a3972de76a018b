#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace qvl {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<std::pair<std::string, int32_t>>& tokens) {
  for (const auto& [content, id] : tokens) {
    if (content.empty()) continue;
    int32_t node = 0;
    for (unsigned char c : content) {
      int32_t next = child(node, c);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        auto& children = nodes_[node].children;
        children.insert(
            std::upper_bound(children.begin(), children.end(), std::make_pair(c, int32_t{-1})),
            {c, next});
      }
      node = next;
    }
    if (nodes_[node].token_id < 0) nodes_[node].token_id = id;  // first definition wins
    first_byte_[static_cast<unsigned char>(content[0])] = true;
  }
}

int32_t AddedTokenMatcher::child(int32_t node, uint8_t byte) const {
  const auto& children = nodes_[node].children;
  auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t{-1}));
  return it != children.end() && it->first == byte ? it->second : -1;
}

AddedTokenMatcher::Match AddedTokenMatcher::find(std::string_view text, size_t from) const {
  for (size_t start = from; start < text.size(); ++start) {
    if (!first_byte_[static_cast<unsigned char>(text[start])]) continue;
    Match best;
    int32_t node = 0;
    for (size_t i = start; i < text.size(); ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      if (nodes_[node].token_id >= 0) best = {start, i + 1 - start, nodes_[node].token_id};
    }
    if (best.id >= 0) return best;
  }
  return {};
}

}  // namespace qvl
