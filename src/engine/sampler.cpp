#include "engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "base/error.h"

namespace qvl {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();
// Up to this k, top_k keeps a heap of the k best while scanning; above, nth_element wins.
constexpr int64_t kHeapTopK = 512;

[[noreturn]] void bad_parameter(const char* name, const std::string& rule, double value) {
  std::ostringstream message;
  message << "sampling parameter " << name << " must be " << rule << " (got " << value << ")";
  fail(ErrorCode::kInvalidArgument, message.str());
}

void check_history(int64_t vocab, const std::vector<int64_t>& prompt_ids,
                   const std::vector<int64_t>& generated_ids) {
  if (vocab <= 0 || vocab > std::numeric_limits<int32_t>::max())
    fail(ErrorCode::kInvalidArgument, "sampler: vocabulary size out of range");
  for (const auto* ids : {&prompt_ids, &generated_ids}) {
    for (int64_t id : *ids) {
      if (id < 0 || id >= vocab)
        fail(ErrorCode::kInvalidArgument,
             "sampler: token id " + std::to_string(id) + " outside the vocabulary");
    }
  }
}

// exp(x) for x <= 0, within 1e-7 relative; 0 below -87, for -inf and for NaN. Only integer
// selects, no branches or library calls, so the loop over the vocabulary vectorises (std::exp
// stays scalar, and float compares block if-conversion under -ftrapping-math).
inline float exp_nonpositive(float x) {
  constexpr uint32_t kLimit = 0x42AE0000u;  // 87.0f: below -87, 2^n is no longer normal
  const uint32_t magnitude = std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
  const float clamped = std::bit_cast<float>(std::min(magnitude, kLimit) | 0x80000000u);
  // n = round(x / ln 2) through the float adder; its low mantissa bits hold n as an integer.
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float shifted = clamped * 1.44269504088896341f + kRound;
  const float n = shifted - kRound;
  const int32_t n_int = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRound);
  // Cody-Waite: r = x - n ln 2 in two steps, |r| <= ln(2) / 2.
  const float r = (clamped - n * 0.693359375f) - n * -2.12194440e-4f;
  // Taylor series to r^7: truncation error < 4e-9 relative on this interval.
  const float poly =
      1.0f +
      r * (1.0f + r * (0.5f + r * (1.0f / 6 +
                                   r * (1.0f / 24 +
                                        r * (1.0f / 120 + r * (1.0f / 720 + r * (1.0f / 5040)))))));
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(n_int + 127) << 23);
  // All ones when magnitude <= kLimit, else zero (NaN and infinity have larger magnitudes).
  const uint32_t keep = static_cast<uint32_t>(static_cast<int32_t>(magnitude - (kLimit + 1)) >> 31);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(poly * scale) & keep);
}

// Maximum of x, skipping NaN (comparisons with NaN are false). Eight independent lanes break
// the dependency chain of a scalar max.
float max_value(const float* x, int64_t n) {
  float lanes[8] = {kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  }
  float result = kNegInf;
  for (; i < n; ++i) result = x[i] > result ? x[i] : result;
  for (float v : lanes) result = v > result ? v : result;
  return result;
}

// Sums in four lanes (fixed order, so deterministic) for instruction-level parallelism.
template <typename Get>
double lane_sum(size_t n, Get get) {
  double lanes[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (size_t j = 0; j < 4; ++j) lanes[j] += get(i + j);
  }
  for (; i < n; ++i) lanes[0] += get(i);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace

void validate_sampling(const SamplingParams& p) {
  // Written as !(valid) so that NaN is rejected too.
  if (!(std::isfinite(p.temperature) && p.temperature >= 0))
    bad_parameter("temperature", "a finite number >= 0", p.temperature);
  if (!(p.top_p > 0 && p.top_p <= 1)) bad_parameter("top_p", "in (0, 1]", p.top_p);
  if (p.top_k < 0) bad_parameter("top_k", ">= 0 (0 disables it)", static_cast<double>(p.top_k));
  if (!(p.min_p >= 0 && p.min_p <= 1)) bad_parameter("min_p", "in [0, 1]", p.min_p);
  if (!(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0))
    bad_parameter("repetition_penalty", "a finite number > 0", p.repetition_penalty);
  if (!(p.presence_penalty >= -2 && p.presence_penalty <= 2))
    bad_parameter("presence_penalty", "in [-2, 2]", p.presence_penalty);
  if (!(p.frequency_penalty >= -2 && p.frequency_penalty <= 2))
    bad_parameter("frequency_penalty", "in [-2, 2]", p.frequency_penalty);
}

bool is_greedy_sampling(const SamplingParams& params) {
  return params.temperature == 0 || params.top_k == 1;
}

Sampler::Sampler(const SamplingParams& params) : params_(params) {
  validate_sampling(params_);
  seed_ = params_.seed ? *params_.seed : random_seed();
  rng_.seed(seed_);
}

int64_t Sampler::sample(const float* logits, int64_t vocab, const std::vector<int64_t>& prompt_ids,
                        const std::vector<int64_t>& generated_ids) {
  prepare(logits, vocab, prompt_ids, generated_ids);
  if (is_greedy_sampling(params_)) return argmax();
  filter();
  const double r = uniform01() * kept_mass();
  // Skip whole blocks first: their sums run in parallel lanes, unlike a token-by-token walk.
  constexpr size_t kBlock = 32;
  size_t i = 0;
  double mass = 0;
  for (; i + kBlock <= kept_; i += kBlock) {
    const double block = lane_sum(kBlock, [&](size_t j) { return candidates_[i + j].weight; });
    if (r < mass + block) break;
    mass += block;
  }
  for (; i < kept_; ++i) {
    mass += candidates_[i].weight;
    if (r < mass) return candidates_[i].id;
  }
  return candidates_[kept_ - 1].id;  // r rounded up to the total: the last token
}

std::vector<TokenProbability> Sampler::distribution(const float* logits, int64_t vocab,
                                                    const std::vector<int64_t>& prompt_ids,
                                                    const std::vector<int64_t>& generated_ids) {
  prepare(logits, vocab, prompt_ids, generated_ids);
  if (is_greedy_sampling(params_)) return {{argmax(), 1.0}};
  filter();
  const double total = kept_mass();
  std::vector<TokenProbability> result;
  result.reserve(kept_);
  for (size_t i = 0; i < kept_; ++i)
    result.push_back({candidates_[i].id, candidates_[i].weight / total});
  std::sort(result.begin(), result.end(), [](const TokenProbability& a, const TokenProbability& b) {
    return a.probability > b.probability || (a.probability == b.probability && a.id < b.id);
  });
  return result;
}

void Sampler::apply_penalties(float* logits, int64_t vocab, const std::vector<int64_t>& prompt_ids,
                              const std::vector<int64_t>& generated_ids) {
  check_history(vocab, prompt_ids, generated_ids);
  if (static_cast<int64_t>(seen_.size()) < vocab) {
    seen_.resize(vocab, 0);
    counts_.resize(vocab, 0);
  }

  const float repetition = params_.repetition_penalty;
  if (repetition != 1.0f) {
    // seen_ makes each distinct token count once, as HF's gather/scatter does.
    for (const auto* ids : {&prompt_ids, &generated_ids}) {
      for (int64_t id : *ids) {
        if (seen_[id]) continue;
        seen_[id] = 1;
        float& x = logits[id];
        x = x < 0 ? x * repetition : x / repetition;
      }
    }
    for (int64_t id : prompt_ids) seen_[id] = 0;
    for (int64_t id : generated_ids) seen_[id] = 0;
  }

  const float presence = params_.presence_penalty;
  const float frequency = params_.frequency_penalty;
  if (presence != 0.0f || frequency != 0.0f) {
    for (int64_t id : generated_ids) ++counts_[id];
    for (int64_t id : generated_ids) {
      if (counts_[id] == 0) continue;  // already applied
      logits[id] -= presence + frequency * static_cast<float>(counts_[id]);
      counts_[id] = 0;
    }
  }
}

void Sampler::prepare(const float* logits, int64_t vocab, const std::vector<int64_t>& prompt_ids,
                      const std::vector<int64_t>& generated_ids) {
  if (logits == nullptr) fail(ErrorCode::kInvalidArgument, "sampler: no logits");
  check_history(vocab, prompt_ids, generated_ids);
  // Vocabulary-sized scratch (~2.4 MB for Qwen3) is sized when first needed: greedy decoding
  // never touches it (each request has its own sampler, and fresh pages cost a fault each).
  vocab_ = vocab;
  const bool penalize =
      (params_.repetition_penalty != 1.0f && !(prompt_ids.empty() && generated_ids.empty())) ||
      ((params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) &&
       !generated_ids.empty());
  // NaN needs no cleaning here: every later pass treats it as -inf (see the comparisons).
  if (!penalize) {  // read the caller's logits directly: no copy
    logits_ = logits;
    return;
  }
  work_.resize(static_cast<size_t>(vocab));
  float* work = work_.data();
  for (int64_t i = 0; i < vocab; ++i) work[i] = std::isnan(logits[i]) ? kNegInf : logits[i];
  apply_penalties(work, vocab, prompt_ids, generated_ids);
  logits_ = work;
}

int64_t Sampler::argmax() const {
  const float best = max_value(logits_, vocab_);
  if (best == kNegInf) fail(ErrorCode::kInternal, "sampler: no token has a finite logit");
  int64_t i = 0;
  while (logits_[i] != best) ++i;  // the first one: lowest id wins ties
  return i;
}

double Sampler::kept_mass() const {
  return lane_sum(kept_, [this](size_t i) { return candidates_[i].weight; });
}

void Sampler::filter() {
  const float* logits = logits_;
  const float max_logit = max_value(logits, vocab_);
  if (max_logit == kNegInf) fail(ErrorCode::kInternal, "sampler: no token has a finite logit");
  weights_.resize(static_cast<size_t>(vocab_));
  candidates_.resize(static_cast<size_t>(vocab_ + 1));
  Candidate* out = candidates_.data();
  size_t count = 0;
  if (max_logit == kPosInf) {  // softmax is undefined; share the mass among the +inf tokens
    for (int64_t i = 0; i < vocab_; ++i) {
      if (logits[i] == kPosInf) out[count++] = {static_cast<int32_t>(i), 1.0f};
    }
    kept_ = count;
    return;
  }
  // Weights are exp((logit - max) / T): 1 for the most likely token, 0 for NaN and -inf.
  const float temperature = params_.temperature;
  const double top_p = params_.top_p;
  if (params_.top_k > 0 && params_.top_k < vocab_) {
    const float threshold = top_k_threshold();
    for (int64_t i = 0; i < vocab_; ++i) {
      if (!(logits[i] >= threshold)) continue;
      const float weight = exp_nonpositive((logits[i] - max_logit) / temperature);
      if (weight > 0) out[count++] = {static_cast<int32_t>(i), weight};
    }
    kept_ = count;
    if (top_p < 1) keep_nucleus(0, 0.0, top_p * kept_mass());
  } else {
    float* weights = weights_.data();
    for (int64_t i = 0; i < vocab_; ++i)
      weights[i] = exp_nonpositive((logits[i] - max_logit) / temperature);
    constexpr float kSmallest = std::numeric_limits<float>::denorm_min();
    if (top_p < 1) {
      const double total = lane_sum(vocab_, [weights](size_t i) { return weights[i]; });
      const double target = top_p * total;
      // Tokens with p >= 1/1024 go first: at most 1024 of them, and when the model is
      // confident they hold the whole nucleus, so the rest is never looked at again.
      const float cutoff = static_cast<float>(total / 1024);
      count = append_candidates(cutoff, kPosInf, 0);
      kept_ = count;
      const double head_mass = kept_mass();
      if (head_mass >= target) {
        keep_nucleus(0, 0.0, target);
      } else {
        kept_ = append_candidates(kSmallest, cutoff, count);
        keep_nucleus(count, head_mass, target);
      }
    } else {
      kept_ = append_candidates(kSmallest, kPosInf, 0);
    }
  }
  if (params_.min_p > 0.0f) {
    // The best token has weight 1, so p < min_p * p_max is weight < min_p.
    size_t kept = 0;
    for (size_t i = 0; i < kept_; ++i) {
      if (candidates_[i].weight >= params_.min_p) candidates_[kept++] = candidates_[i];
    }
    kept_ = kept;
  }
}

// Appends, in id order after the first `start` candidates, the tokens whose weight is in
// [low, high); returns the new count. Branch-free: every token is written, few are kept.
size_t Sampler::append_candidates(float low, float high, size_t start) {
  const float* weights = weights_.data();
  Candidate* out = candidates_.data();  // vocab + 1 entries: the last write may be a spare
  size_t count = start;
  for (int64_t i = 0; i < vocab_; ++i) {
    out[count] = {static_cast<int32_t>(i), weights[i]};
    count += static_cast<size_t>(weights[i] >= low) & static_cast<size_t>(weights[i] < high);
  }
  return count;
}

// The k-th largest logit. Like HF's TopKLogitsWarper, every token tied with it is kept.
float Sampler::top_k_threshold() {
  const int64_t k = params_.top_k;
  const float* logits = logits_;
  if (k > kHeapTopK) {
    heap_.resize(vocab_);
    for (int64_t i = 0; i < vocab_; ++i) heap_[i] = std::isnan(logits[i]) ? kNegInf : logits[i];
    std::nth_element(heap_.begin(), heap_.begin() + (k - 1), heap_.end(), std::greater<float>());
    return heap_[k - 1];
  }
  // A min-heap of the k best seen so far: most tokens then fail a single comparison.
  heap_.resize(k);
  for (int64_t i = 0; i < k; ++i) heap_[i] = std::isnan(logits[i]) ? kNegInf : logits[i];
  std::make_heap(heap_.begin(), heap_.end(), std::greater<float>());
  for (int64_t i = k; i < vocab_; ++i) {
    if (logits[i] > heap_.front()) {  // false for NaN
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<float>());
      heap_.back() = logits[i];
      std::push_heap(heap_.begin(), heap_.end(), std::greater<float>());
    }
  }
  return heap_.front();
}

// Keeps the smallest most-probable set whose mass reaches `target` (HF: a token stays when
// the mass of the tokens before it is < top_p). candidates_[0, first) are already known to be
// kept and more probable than the rest, with mass `mass_before`. Instead of sorting, a
// quickselect on probability narrows down the boundary token: each step splits the range
// around a pivot and keeps the side where the cumulative mass crosses the target.
void Sampler::keep_nucleus(size_t first_index, double mass_before, double target) {
  const auto more_probable = [](const Candidate& a, const Candidate& b) {
    return a.weight > b.weight || (a.weight == b.weight && a.id < b.id);
  };
  const auto begin = candidates_.begin();
  auto first = begin + first_index;  // [first, last) is unresolved
  auto last = begin + kept_;
  // Deterministic pivots could meet an unlucky order; then finish with a sort (introselect).
  int pivots_left = 2 * std::bit_width(kept_);
  while (last - first > 16 && pivots_left-- > 0) {
    // Median of three distinct elements: neither side of the split can be empty.
    Candidate a = *first, b = first[(last - first) / 2], c = last[-1];
    if (more_probable(b, a)) std::swap(a, b);
    if (more_probable(c, b)) std::swap(b, c);
    if (more_probable(b, a)) std::swap(a, b);
    const Candidate pivot = b;
    const auto middle =
        std::partition(first, last, [&](const Candidate& x) { return !more_probable(pivot, x); });
    const double upper = lane_sum(middle - first, [&](size_t i) { return first[i].weight; });
    if (mass_before + upper >= target) {
      last = middle;
    } else {
      mass_before += upper;
      first = middle;
    }
  }
  std::sort(first, last, more_probable);
  for (auto it = first; it != last; ++it) {
    mass_before += it->weight;
    if (mass_before >= target) {
      kept_ = it - begin + 1;
      return;
    }
  }
  kept_ = last - begin;  // rounding left the mass just below target: keep the rest too
}

double Sampler::uniform01() {
  // 53 random bits -> [0, 1) exactly the same on every platform.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

}  // namespace qvl
