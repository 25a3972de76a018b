#include "grammar/token_trie.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace qvl::grammar {
namespace {

TokenTrie::Nodes build(const std::vector<std::string>& bytes, std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end(), [&](int32_t x, int32_t y) {
    return bytes[x] < bytes[y] || (bytes[x] == bytes[y] && x < y);
  });
  TokenTrie::Nodes n;
  n.sorted_ids = ids;
  // Root first (index 0); then each token's new suffix, one node per byte.
  auto push = [&](uint8_t b, uint16_t depth) {
    n.byte.push_back(b);
    n.depth.push_back(depth);
    n.skip.push_back(0);
    n.tok_begin.push_back(0);
    n.tok_end.push_back(0);
    n.max_depth = std::max(n.max_depth, depth);
  };
  push(0, 0);
  std::vector<uint32_t> path = {0};  // node index per depth of the current token
  const std::string* previous = nullptr;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& s = bytes[ids[i]];
    QVL_CHECK(s.size() < 0xFFFF);
    size_t common = 0;
    if (previous != nullptr) {
      const size_t limit = std::min(previous->size(), s.size());
      while (common < limit && (*previous)[common] == s[common]) ++common;
    }
    // Close the subtrees of the previous token deeper than the shared prefix.
    while (path.size() > common + 1) {
      n.skip[path.back()] = static_cast<uint32_t>(n.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(n.size()));
      push(static_cast<uint8_t>(s[d]), static_cast<uint16_t>(d + 1));
    }
    const uint32_t last = path.back();
    if (n.tok_end[last] == n.tok_begin[last]) n.tok_begin[last] = static_cast<uint32_t>(i);
    n.tok_end[last] = static_cast<uint32_t>(i + 1);
    previous = &s;
  }
  while (!path.empty()) {
    n.skip[path.back()] = static_cast<uint32_t>(n.size());
    path.pop_back();
  }
  return n;
}

}  // namespace

bool TokenTrie::is_plain_string_content(const std::string& bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == '"' || c == '\\') return false;
      ++i;
      continue;
    }
    const size_t extra = c >= 0xC2 && c <= 0xDF   ? 1
                         : c >= 0xE0 && c <= 0xEF ? 2
                         : c >= 0xF0 && c <= 0xF4 ? 3
                                                  : 0;
    if (extra == 0 || i + extra >= bytes.size()) return false;  // not whole characters
    for (size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(bytes[i + k]) & 0xC0) != 0x80) return false;
    }
    i += extra + 1;
  }
  return true;
}

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes) : vocab_(token_bytes.size()) {
  std::vector<int32_t> all, rest;
  plain_bits_.assign((vocab_ + 63) / 64, 0);
  for (size_t id = 0; id < token_bytes.size(); ++id) {
    if (token_bytes[id].empty()) continue;
    all.push_back(static_cast<int32_t>(id));
    if (is_plain_string_content(token_bytes[id])) {
      plain_bits_[id / 64] |= uint64_t{1} << (id % 64);
      ++plain_count_;
    } else {
      rest.push_back(static_cast<int32_t>(id));
    }
  }
  all_ = build(token_bytes, std::move(all));
  not_plain_ = build(token_bytes, std::move(rest));
}

}  // namespace qvl::grammar
