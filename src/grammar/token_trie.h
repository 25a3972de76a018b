// The vocabulary as a byte trie, built once per model: tokens sorted by their bytes, trie nodes in
// depth-first order with the index where each subtree ends, so a walk can skip a rejected prefix
// with all its extensions in one jump. Tokens that stay inside JSON string content whatever comes
// around them (printable ASCII except " and \, and whole UTF-8 characters) are also kept as a
// bit set, with a second trie of the rest, so string content needs no walk over most tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qvl::grammar {

class TokenTrie {
 public:
  struct Nodes {
    std::vector<uint8_t> byte;
    std::vector<uint16_t> depth;      // 1 for children of the root
    std::vector<uint32_t> skip;       // index after this node's subtree
    std::vector<uint32_t> tok_begin;  // tokens ending here: sorted_ids[tok_begin, tok_end)
    std::vector<uint32_t> tok_end;
    std::vector<int32_t> sorted_ids;
    uint16_t max_depth = 0;
    size_t size() const { return byte.size(); }
  };

  // `token_bytes[id]` is what token id spells; empty entries (special tokens, padding rows)
  // are never allowed.
  explicit TokenTrie(const std::vector<std::string>& token_bytes);

  size_t vocab_size() const { return vocab_; }
  const Nodes& all() const { return all_; }
  const Nodes& not_plain() const { return not_plain_; }
  const std::vector<uint64_t>& plain_bits() const { return plain_bits_; }
  size_t plain_count() const { return plain_count_; }

  // Whether a token's bytes stay inside free JSON string content.
  static bool is_plain_string_content(const std::string& bytes);

 private:
  size_t vocab_ = 0;
  Nodes all_, not_plain_;
  std::vector<uint64_t> plain_bits_;
  size_t plain_count_ = 0;
};

}  // namespace qvl::grammar
