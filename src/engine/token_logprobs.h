// Log-probabilities of generated tokens (OpenAI's `logprobs`): log-softmax of one step's raw
// logits, the chosen token's value and the k most likely tokens, found with a k-sized heap in one
// pass (the vocabulary is never sorted).
#pragma once

#include <cstdint>
#include <vector>

#include "qvl/engine.h"

namespace qvl {

struct TokenLogprobValue {
  int64_t id = 0;
  double logprob = 0;
};

struct StepLogprobs {
  TokenLogprobValue chosen;
  std::vector<TokenLogprobValue> top;  // most likely first, ties by lower id
};

// log p(token) and the `top` most likely tokens under softmax(logits). NaN logits count as -inf.
// Throws kInvalidArgument when token is outside [0, vocab) or top is outside [0, kMaxTopLogprobs].
StepLogprobs step_logprobs(const float* logits, int64_t vocab, int64_t token, int64_t top);

}  // namespace qvl
