#include "engine/sequence.h"

#include "engine/token_logprobs.h"

namespace qvl {

void Sequence::record_logprobs(const float* logits, int64_t vocab, int64_t token) {
  const StepLogprobs step = step_logprobs(logits, vocab, token, top_logprobs);
  const auto with_bytes = [this](const TokenLogprobValue& v) {
    return TokenLogprob{v.id, v.logprob,
                        std::string(tokenizer.token_bytes(static_cast<int32_t>(v.id)))};
  };
  GeneratedTokenLogprobs entry;
  entry.token = with_bytes(step.chosen);
  for (const TokenLogprobValue& v : step.top) entry.top.push_back(with_bytes(v));
  result.logprobs.push_back(std::move(entry));
  if (on_logprobs) on_logprobs(result.logprobs.back());
}

uint64_t image_pad_key(uint64_t image_identity, int64_t row) {
  // The top bit keeps pad keys apart from token ids (below 2^32).
  uint64_t z = image_identity + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(row + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) | (1ull << 63);
}

}  // namespace qvl
