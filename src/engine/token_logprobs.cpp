#include "engine/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

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
  float max_logit = kNegInf;
  for (int64_t i = 0; i < vocab; ++i) max_logit = std::max(max_logit, clean(logits[i]));
  // log-sum-exp in double over four fixed lanes: deterministic and accurate to ~1e-12.
  double lanes[4] = {0, 0, 0, 0};
  if (std::isfinite(max_logit)) {
    for (int64_t i = 0; i < vocab; ++i) {
      lanes[i & 3] += std::exp(static_cast<double>(clean(logits[i])) - max_logit);
    }
  }
  const double total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  const double log_norm = std::isfinite(max_logit) ? max_logit + std::log(total) : 0.0;
  const auto logprob = [&](int64_t id) {
    const float x = clean(logits[id]);
    if (!std::isfinite(max_logit)) return x == max_logit ? 0.0 : -INFINITY;  // degenerate rows
    return x == kNegInf ? -INFINITY : static_cast<double>(x) - log_norm;
  };

  StepLogprobs out;
  out.chosen = {token, logprob(token)};
  if (top == 0) return out;
  // A heap whose front is the weakest of the `top` best so far (by logit, then id): most tokens
  // fail one comparison with it.
  std::vector<TokenLogprobValue> heap;
  heap.reserve(static_cast<size_t>(top));
  for (int64_t i = 0; i < vocab; ++i) {
    const TokenLogprobValue candidate{i, clean(logits[i])};
    if (static_cast<int64_t>(heap.size()) < top) {
      heap.push_back(candidate);
      std::push_heap(heap.begin(), heap.end(), ranks_before);
    } else if (ranks_before(candidate, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), ranks_before);
      heap.back() = candidate;
      std::push_heap(heap.begin(), heap.end(), ranks_before);
    }
  }
  std::sort(heap.begin(), heap.end(), ranks_before);
  for (TokenLogprobValue& t : heap) t.logprob = logprob(t.id);
  out.top = std::move(heap);
  return out;
}

}  // namespace qvl
