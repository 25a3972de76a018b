// Streaming detokenizer: feed generated ids one at a time and get text as soon as it is complete
// UTF-8, never half a character. The concatenation of every push() and the final flush() equals
// Tokenizer::decode() of all ids (same U+FFFD placement), which the tests check.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace qvl {

class IncrementalDecoder {
 public:
  // Keeps a copy of `tokenizer` (shared state), so the decoder may outlive the caller's object.
  explicit IncrementalDecoder(Tokenizer tokenizer, bool skip_special_tokens = false);

  // Returns the text that became complete with this id (possibly empty). Bytes that are a valid
  // but unfinished prefix of a character are held back; bytes that can never become valid are
  // emitted as U+FFFD right away.
  std::string push(int32_t id);
  // Ends the stream: held-back bytes become one U+FFFD. The decoder can then be reused.
  std::string flush();
  // Bytes currently held back (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  Tokenizer tokenizer_;
  bool skip_special_tokens_;
  std::string pending_;
};

}  // namespace qvl
