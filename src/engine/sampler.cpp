#include "engine/sampler.h"

#include <algorithm>
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
  double total = 0;
  for (size_t i = 0; i < kept_; ++i) total += candidates_[i].weight;
  // Same summation order as `total`, so the last positive weight always reaches r < total.
  const double r = uniform01() * total;
  double mass = 0;
  int64_t last_positive = candidates_[0].id;
  for (size_t i = 0; i < kept_; ++i) {
    if (candidates_[i].weight <= 0) continue;
    mass += candidates_[i].weight;
    last_positive = candidates_[i].id;
    if (r < mass) return last_positive;
  }
  return last_positive;  // only reachable through rounding of r at the very top
}

std::vector<TokenProbability> Sampler::distribution(const float* logits, int64_t vocab,
                                                    const std::vector<int64_t>& prompt_ids,
                                                    const std::vector<int64_t>& generated_ids) {
  prepare(logits, vocab, prompt_ids, generated_ids);
  if (is_greedy_sampling(params_)) return {{argmax(), 1.0}};
  filter();
  double total = 0;
  for (size_t i = 0; i < kept_; ++i) total += candidates_[i].weight;
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
  if (vocab <= 0 || vocab > std::numeric_limits<int32_t>::max())
    fail(ErrorCode::kInvalidArgument, "sampler: vocabulary size out of range");
  for (const auto* ids : {&prompt_ids, &generated_ids}) {
    for (int64_t id : *ids) {
      if (id < 0 || id >= vocab)
        fail(ErrorCode::kInvalidArgument,
             "sampler: token id " + std::to_string(id) + " outside the vocabulary");
    }
  }
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
  if (vocab <= 0 || vocab > std::numeric_limits<int32_t>::max())
    fail(ErrorCode::kInvalidArgument, "sampler: vocabulary size out of range");
  if (vocab != vocab_) {
    work_.resize(vocab);
    candidates_.reserve(vocab);
    vocab_ = vocab;
  }
  float* work = work_.data();
  for (int64_t i = 0; i < vocab; ++i) work[i] = std::isnan(logits[i]) ? kNegInf : logits[i];
  apply_penalties(work, vocab, prompt_ids, generated_ids);
}

int64_t Sampler::argmax() const {
  const float* work = work_.data();
  int64_t best = -1;
  float best_value = kNegInf;
  for (int64_t i = 0; i < vocab_; ++i) {
    if (work[i] > best_value) {  // strict: the lowest id wins ties
      best_value = work[i];
      best = i;
    }
  }
  if (best < 0) fail(ErrorCode::kInternal, "sampler: no token has a finite logit");
  return best;
}

void Sampler::filter() {
  const bool top_k_active = params_.top_k > 0 && params_.top_k < vocab_;
  collect_candidates(top_k_active ? top_k_threshold() : kNegInf);
  kept_ = candidates_.size();
  if (params_.top_p < 1.0f) keep_nucleus();
  if (params_.min_p > 0.0f) {
    // Weights are relative to the most likely token, so p < min_p * p_max is weight < min_p.
    size_t out = 0;
    for (size_t i = 0; i < kept_; ++i) {
      if (candidates_[i].weight >= params_.min_p) candidates_[out++] = candidates_[i];
    }
    kept_ = out;
  }
}

// The k-th largest logit. Like HF's TopKLogitsWarper, every token tied with it is kept.
float Sampler::top_k_threshold() {
  const int64_t k = params_.top_k;
  const float* work = work_.data();
  if (k > kHeapTopK) {
    heap_.assign(work, work + vocab_);
    std::nth_element(heap_.begin(), heap_.begin() + (k - 1), heap_.end(), std::greater<float>());
    return heap_[k - 1];
  }
  heap_.clear();  // a min-heap of the k best seen so far: most tokens fail one comparison
  for (int64_t i = 0; i < vocab_; ++i) {
    if (static_cast<int64_t>(heap_.size()) < k) {
      heap_.push_back(work[i]);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<float>());
    } else if (work[i] > heap_.front()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<float>());
      heap_.back() = work[i];
      std::push_heap(heap_.begin(), heap_.end(), std::greater<float>());
    }
  }
  return heap_.front();
}

// Tokens with logit >= threshold and a non-zero weight after temperature, in id order.
void Sampler::collect_candidates(float threshold) {
  const float* work = work_.data();
  float max_logit = kNegInf;
  for (int64_t i = 0; i < vocab_; ++i) max_logit = std::max(max_logit, work[i]);
  if (max_logit == kNegInf) fail(ErrorCode::kInternal, "sampler: no token has a finite logit");
  candidates_.clear();
  if (max_logit == kPosInf) {  // softmax is undefined; share the mass among the +inf tokens
    for (int64_t i = 0; i < vocab_; ++i) {
      if (work[i] == kPosInf) candidates_.push_back({static_cast<int32_t>(i), 1.0f});
    }
    return;
  }
  const float temperature = params_.temperature;
  for (int64_t i = 0; i < vocab_; ++i) {
    if (work[i] < threshold) continue;
    const float weight = std::exp((work[i] - max_logit) / temperature);
    if (weight > 0) candidates_.push_back({static_cast<int32_t>(i), weight});
  }
}

// Keeps the smallest most-probable set whose mass reaches top_p (HF: a token stays when the
// mass of the tokens before it is < top_p). Sorting the whole vocabulary is avoided: tokens
// above a weight cutoff are sorted first, and the cutoff is lowered only if their mass falls
// short; at most total/cutoff tokens can be above it.
void Sampler::keep_nucleus() {
  double total = 0;
  for (const Candidate& c : candidates_) total += c.weight;
  const double target = params_.top_p * total;
  const auto more_probable = [](const Candidate& a, const Candidate& b) {
    return a.weight > b.weight || (a.weight == b.weight && a.id < b.id);
  };
  const auto begin = candidates_.begin();
  const auto end = candidates_.end();
  size_t sorted = 0;
  double mass = 0;
  double cutoff = total / 1024;
  for (int round = 0;; ++round) {
    if (round == 3) cutoff = 0;  // give up on pruning: sort the rest
    const auto middle = std::partition(begin + sorted, end,
                                       [cutoff](const Candidate& c) { return c.weight >= cutoff; });
    std::sort(begin + sorted, middle, more_probable);
    const size_t limit = middle - begin;
    for (; sorted < limit; ++sorted) {
      mass += candidates_[sorted].weight;
      if (mass >= target) {
        kept_ = sorted + 1;
        return;
      }
    }
    if (middle == end) break;
    cutoff /= 64;
  }
  kept_ = sorted;  // rounding kept the mass just below target: keep everything
}

double Sampler::uniform01() {
  // 53 random bits -> [0, 1) exactly the same on every platform.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

}  // namespace qvl
