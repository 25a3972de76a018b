// Token sampler: turns one step's logits into the next token id, following the order of
// Hugging Face transformers' generate(): repetition penalty, presence/frequency penalties
// (OpenAI semantics), temperature, top_k, top_p, min_p, then a seeded random draw.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "qvl/engine.h"

namespace qvl {

// Throws qvl::Error(kInvalidArgument) naming the first bad parameter.
void validate_sampling(const SamplingParams& params);

// Greedy decoding (argmax, lowest id on ties): temperature 0 or top_k 1.
bool is_greedy_sampling(const SamplingParams& params);

struct TokenProbability {
  int64_t id = 0;
  double probability = 0;
};

// One Sampler per request: it owns the random stream and reusable scratch buffers, so a call
// allocates nothing once the buffers have grown to the vocabulary size. Not thread-safe.
class Sampler {
 public:
  // Validates `params`; seeds from params.seed, or from std::random_device when absent.
  explicit Sampler(const SamplingParams& params);

  // The next token for `logits` (vocab floats, left unmodified). The penalties see
  // prompt_ids + generated_ids (repetition) and generated_ids alone (presence, frequency).
  // NaN logits count as -inf; throws kInvalidArgument on history ids outside [0, vocab) and
  // kInternal when no token has a finite logit.
  int64_t sample(const float* logits, int64_t vocab, const std::vector<int64_t>& prompt_ids,
                 const std::vector<int64_t>& generated_ids);

  // The exact distribution sample() draws from: the tokens kept by every filter with their
  // renormalised probabilities, most probable first (ties: lowest id first). Greedy gives
  // the argmax with probability 1. For tests and diagnostics; allocates the result.
  std::vector<TokenProbability> distribution(const float* logits, int64_t vocab,
                                             const std::vector<int64_t>& prompt_ids,
                                             const std::vector<int64_t>& generated_ids);

  // Applies only the penalties, in place: repetition (HF: logit > 0 ? logit / p : logit * p,
  // once per distinct token of prompt + generated), then presence and frequency (OpenAI:
  // logit -= presence * (count > 0) + frequency * count, counts over generated tokens).
  void apply_penalties(float* logits, int64_t vocab, const std::vector<int64_t>& prompt_ids,
                       const std::vector<int64_t>& generated_ids);

  const SamplingParams& params() const { return params_; }
  uint64_t seed() const { return seed_; }

 private:
  struct Candidate {
    int32_t id;
    float weight;  // exp((logit - max) / temperature): 1 for the most likely token
  };

  // Points logits_ at the logits to sample from: the caller's, or a copy in work_ with NaN
  // replaced by -inf and the penalties applied.
  void prepare(const float* logits, int64_t vocab, const std::vector<int64_t>& prompt_ids,
               const std::vector<int64_t>& generated_ids);
  int64_t argmax() const;
  // Fills candidates_[0, kept_) with the tokens that survive top_k, top_p and min_p.
  void filter();
  float top_k_threshold();
  size_t append_candidates(float low, float high, size_t start);
  void keep_nucleus(size_t first_index, double mass_before, double target);
  double kept_mass() const;
  double uniform01();

  SamplingParams params_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;  // output fully specified by the C++ standard: portable streams
  int64_t vocab_ = 0;
  const float* logits_ = nullptr;
  std::vector<float> work_;
  std::vector<float> weights_;
  std::vector<int32_t> counts_;  // scratch, all zero between calls
  std::vector<uint8_t> seen_;    // scratch, all zero between calls
  std::vector<float> heap_;
  std::vector<Candidate> candidates_;  // vocab + 1 entries, the first kept_ in use
  size_t kept_ = 0;
};

}  // namespace qvl
