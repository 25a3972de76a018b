#include "tokenizer/incremental_decoder.h"

#include "tokenizer/utf8.h"

namespace qvl {

IncrementalDecoder::IncrementalDecoder(Tokenizer tokenizer, bool skip_special_tokens)
    : tokenizer_(std::move(tokenizer)), skip_special_tokens_(skip_special_tokens) {}

std::string IncrementalDecoder::push(int32_t id) {
  std::string out;
  if (tokenizer_.is_added_token(id)) {
    if (skip_special_tokens_ && tokenizer_.is_special_token(id)) return out;
    out = flush();  // an added token ends the byte run before it, as in Tokenizer::decode
    out += tokenizer_.token_bytes(id);
    return out;
  }
  pending_ += tokenizer_.token_bytes(id);
  const size_t consumed = append_utf8_lossy(pending_, out, /*final=*/false);
  pending_.erase(0, consumed);
  return out;
}

std::string IncrementalDecoder::flush() {
  std::string out;
  append_utf8_lossy(pending_, out, /*final=*/true);
  pending_.clear();
  return out;
}

}  // namespace qvl
