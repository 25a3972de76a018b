// Quality of a fast weight type against a reference (normally `exact`): the same prompts and
// continuations are teacher-forced through both models and every next-token distribution is
// compared (KL, top-1 agreement), and so is every image's vision-tower output (cosine similarity
// per image token). Used by `qvl quality` and the parity tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/logit_comparison.h"
#include "qvl/engine.h"

namespace qvl {

struct QualityPrompt {
  std::string name;
  GenerationRequest request;          // messages and images; sampling is not used
  std::vector<int64_t> continuation;  // teacher-forced after the prompt
};

// The reference model's logits at every scored position of every prompt. Kept in memory:
// prompts x (continuation + 1) x vocab floats (5 golden cases x 17 x 151936 = 52 MB), so that
// the candidate models can be loaded one at a time and compared row by row.
class ReferenceLogits {
 public:
  static ReferenceLogits record(Engine& reference, const std::vector<QualityPrompt>& prompts);

  size_t prompts() const { return rows_.size(); }
  int64_t vocab() const { return vocab_; }
  const std::vector<int64_t>& prompt_ids(size_t prompt) const { return prompt_ids_[prompt]; }
  // index: as in Engine::score (0 = after the last prompt token).
  const float* row(size_t prompt, int64_t index) const;
  // The reference's embeddings of each image of the prompt (Engine::embed_image).
  const std::vector<Engine::ImageEmbeddings>& images(size_t prompt) const {
    return images_[prompt];
  }

 private:
  int64_t vocab_ = 0;
  std::vector<std::vector<int64_t>> prompt_ids_;
  std::vector<std::vector<float>> rows_;  // per prompt [continuation + 1, vocab]
  std::vector<std::vector<Engine::ImageEmbeddings>> images_;
};

// Cosine similarity of candidate and reference image embeddings, per image token.
struct ImageAgreement {
  int64_t tokens = 0;
  double min_cosine = 1.0;
  double sum_cosine = 0.0;
  double mean_cosine() const { return tokens > 0 ? sum_cosine / static_cast<double>(tokens) : 1.0; }
  void merge(const ImageAgreement& o);
};
// Throws qvl::Error(kInvalidArgument) if the shapes differ.
ImageAgreement compare_image_embeddings(const Engine::ImageEmbeddings& reference,
                                        const Engine::ImageEmbeddings& candidate);

struct PromptAgreement {
  std::string name;
  int64_t prompt_tokens = 0;
  int64_t image_tokens = 0;
  AgreementStats stats;   // candidate vs reference, every scored position
  ImageAgreement images;  // the prompt's images' embeddings (tokens == 0 without images)
  // Continuation tokens that are also the candidate's argmax, and how many leading ones in a
  // row: when the continuation is the reference's greedy output, greedy_prefix ==
  // continuation length means the candidate keeps the greedy tokens.
  int64_t continuation_top1 = 0;
  int64_t greedy_prefix = 0;
  int64_t continuation_length = 0;
};

struct QualityReport {
  std::vector<PromptAgreement> prompts;
  AgreementStats total;
  ImageAgreement images;
  bool keeps_greedy_tokens() const;  // every prompt's greedy_prefix covers its continuation
};

// Throws qvl::Error if the candidate builds different prompt ids than the reference did (the
// comparison would be meaningless), or for anything Engine::score rejects.
QualityReport measure_agreement(Engine& candidate, const std::vector<QualityPrompt>& prompts,
                                const ReferenceLogits& reference);

}  // namespace qvl
