// What a loaded Tokenizer holds (private to the tokenizer layer: tokenizer.cpp builds it from
// tokenizer.json, tokenizer_compact.cpp from and to the compact form).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

inline constexpr uint8_t kTokenAdded = 1;
inline constexpr uint8_t kTokenSpecial = 2;

struct Tokenizer::State {
  std::vector<std::string> id_bytes;  // raw bytes per id (content for added tokens)
  std::vector<uint8_t> id_flags;      // kTokenAdded / kTokenSpecial
  // Vocabulary spelling -> id (token_id; added tokens are not in it). Loading tokenizer.json
  // fills it directly. A compact load only records the entries (lazy_vocab_*) and the map is
  // built on first use: building 150k hashed strings was most of that load's time.
  mutable std::unordered_map<std::string, int32_t> spelling_to_id;
  mutable std::once_flag spelling_once;
  std::vector<int32_t> lazy_vocab_ids;                            // entries spelling id_bytes[id]
  std::vector<std::pair<int32_t, std::string>> lazy_vocab_other;  // entries with other bytes
  const std::unordered_map<std::string, int32_t>& spellings() const;
  std::vector<AddedToken> added;
  AddedTokenMatcher added_matcher;
  bool nfc = false;
  std::string split_pattern;  // of the pretokenizer, as in tokenizer.json
  std::optional<SplitPretokenizer> pretokenizer;
  // The inputs of bpe, kept so the compact form can be written.
  std::array<int32_t, 256> byte_ids{};
  std::vector<BpeModel::Merge> merges;
  std::optional<BpeModel> bpe;

  void encode_segment(std::string_view text, std::vector<int32_t>& ids) const;
};

}  // namespace qvl
