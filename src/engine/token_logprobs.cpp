#include "engine/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "ops/softmax_stats.h"

namespace qvl {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float clean(float x) {
  return std::isnan(x) ? kNegInf : x;
}

// Higher logit first; on equal logits the lower id.
bool ranks_before(const TokenLogprobValue& a, const TokenLogprobValue& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
}

}  // namespace

StepLogprobs step_logprobs(const float* logits, int64_t vocab, int64_t token, int64_t top) {
  if (token < 0 || token >= vocab) {
    fail(ErrorCode::kInvalidArgument, "logprobs: token id outside the vocabulary");
  }
  if (top < 0 || top > kMaxTopLogprobs) {
    fail(ErrorCode::kInvalidArgument,
         "logprobs: top must be between 0 and " + std::to_string(kMaxTopLogprobs));
  }
  // Vector exponentials (float, ~1e-7 relative each) summed in double: ~30x faster than libm's
  // double exp, which made logprobs the serial part of a batched decode step.
  const ops::ExpSum stats = ops::exp_sum(logits, vocab);
  const float max_logit = stats.max;
  const double log_norm = std::isfinite(max_logit) ? max_logit + std::log(stats.sum) : 0.0;
  const auto logprob = [&](int64_t id) {
    const float x = clean(logits[id]);
    if (!std::isfinite(max_logit)) return x == max_logit ? 0.0 : -INFINITY;  // degenerate rows
    return x == kNegInf ? -INFINITY : static_cast<double>(x) - log_norm;
  };

  StepLogprobs out;
  out.chosen = {token, logprob(token)};
  if (top == 0) return out;
  // A heap whose front is the weakest of the `top` best so far (by logit, then id). Ids come in
  // ascending order, so a later token enters only with a logit strictly above the front's: most
  // blocks of 64 are dismissed by one comparison each (NaN compares false, as -inf should).
  std::vector<TokenLogprobValue> heap;
  heap.reserve(static_cast<size_t>(top));
  const auto consider = [&](int64_t i) {
    const TokenLogprobValue candidate{i, clean(logits[i])};
    if (static_cast<int64_t>(heap.size()) < top) {
      heap.push_back(candidate);
      std::push_heap(heap.begin(), heap.end(), ranks_before);
    } else if (ranks_before(candidate, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), ranks_before);
      heap.back() = candidate;
      std::push_heap(heap.begin(), heap.end(), ranks_before);
    }
  };
  constexpr int64_t kBlock = 64;
  int64_t i = 0;
  for (; i < vocab && static_cast<int64_t>(heap.size()) < top; ++i) consider(i);
  for (; i < vocab; i += kBlock) {
    const int64_t end = std::min(vocab, i + kBlock);
    const auto weakest = static_cast<float>(heap.front().logprob);
    int above = 0;
    if (end - i == kBlock) {
      for (int64_t j = 0; j < kBlock; ++j) above |= logits[i + j] > weakest ? 1 : 0;
    } else {
      above = 1;
    }
    if (above != 0) {
      for (int64_t j = i; j < end; ++j) consider(j);
    }
  }
  std::sort(heap.begin(), heap.end(), ranks_before);
  for (TokenLogprobValue& t : heap) t.logprob = logprob(t.id);
  out.top = std::move(heap);
  return out;
}

}  // namespace qvl
