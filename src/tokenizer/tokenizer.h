// Qwen-style byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json.
//
// Encoding: invalid UTF-8 -> U+FFFD (maximal subparts), split on added tokens (raw text, leftmost
// longest), NFC, Split-regex pre-tokenisation, byte-level BPE. Decoding: token bytes joined and
// turned into text with invalid sequences -> U+FFFD; added tokens decode to their content.
// A Tokenizer is immutable after loading, cheap to copy (shared state) and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
};

struct EncodeOptions {
  // When false, added/special token text such as "<|im_start|>" is encoded as plain text
  // (useful for untrusted user content).
  bool parse_special_tokens = true;
};

class Tokenizer {
 public:
  // Loads <dir>/tokenizer.json. The file may be a symlink, or a small text file holding a relative
  // path to the real file (how symlinks look after a copy that does not keep them).
  static Tokenizer from_model_dir(const std::string& dir);
  static Tokenizer from_file(const std::string& tokenizer_json_path);
  static Tokenizer from_json_text(std::string_view json_text);
  // The tokenizer.json file from_model_dir reads (following a symlink left as a text file).
  static std::string json_path_in_model_dir(const std::string& dir);

  // A compact binary form of the loaded tokenizer (vocabulary bytes, merges as id triples, added
  // tokens, pipeline settings) that loads an order of magnitude faster than tokenizer.json
  // (pre-packed model files store it). from_compact(t.to_compact()) encodes and decodes exactly
  // as t. A damaged blob throws Error(kCorrupt).
  std::string to_compact() const;
  static Tokenizer from_compact(std::string_view compact);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Appends the ids of `text` to `ids`.
  void encode_append(std::string_view text, std::vector<int32_t>& ids,
                     const EncodeOptions& options = {}) const;

  // Valid UTF-8 text of `ids`. Ids without a token (e.g. model padding rows) decode to nothing.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // The raw bytes a token stands for (the content for added tokens); empty for unknown ids.
  std::string_view token_bytes(int32_t id) const;
  bool is_added_token(int32_t id) const;
  bool is_special_token(int32_t id) const;

  // Id of a token by its spelling: added-token content ("<|im_start|>") or a vocabulary entry
  // in its byte-level form ("Ġhello"). token_id_or_throw throws Error(kNotFound).
  std::optional<int32_t> token_id(std::string_view token) const;
  int32_t token_id_or_throw(std::string_view token) const;

  // Number of ids the tokenizer knows: max id + 1 over vocabulary and added tokens (151669 for
  // Qwen3). The model's embedding table may be larger.
  int32_t vocab_size() const;
  const std::vector<AddedToken>& added_tokens() const;

  struct State;

 private:
  explicit Tokenizer(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

}  // namespace qvl
