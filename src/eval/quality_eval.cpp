#include "eval/quality_eval.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace qvl {

ReferenceLogits ReferenceLogits::record(Engine& reference,
                                        const std::vector<QualityPrompt>& prompts) {
  ReferenceLogits out;
  out.vocab_ = reference.info().vocab_size;
  for (const QualityPrompt& p : prompts) {
    const size_t rows = p.continuation.size() + 1;
    std::vector<float> logits(rows * static_cast<size_t>(out.vocab_));
    const ScoreResult r =
        reference.score(p.request, p.continuation, [&](int64_t index, const float* row) {
          std::copy_n(row, out.vocab_, logits.begin() + index * out.vocab_);
        });
    out.prompt_ids_.push_back(r.prompt_ids);
    out.rows_.push_back(std::move(logits));
    std::vector<Engine::ImageEmbeddings> images;
    for (const ImageInput& image : p.request.images) images.push_back(reference.embed_image(image));
    out.images_.push_back(std::move(images));
  }
  return out;
}

const float* ReferenceLogits::row(size_t prompt, int64_t index) const {
  QVL_CHECK(prompt < rows_.size());
  QVL_CHECK(index >= 0 && (index + 1) * vocab_ <= static_cast<int64_t>(rows_[prompt].size()));
  return rows_[prompt].data() + index * vocab_;
}

void ImageAgreement::merge(const ImageAgreement& o) {
  tokens += o.tokens;
  min_cosine = std::min(min_cosine, o.min_cosine);
  sum_cosine += o.sum_cosine;
}

ImageAgreement compare_image_embeddings(const Engine::ImageEmbeddings& reference,
                                        const Engine::ImageEmbeddings& candidate) {
  if (reference.tokens != candidate.tokens || reference.width != candidate.width ||
      reference.values.size() != candidate.values.size()) {
    fail(ErrorCode::kInvalidArgument, "image embeddings of different shapes (" +
                                          std::to_string(reference.tokens) + " vs " +
                                          std::to_string(candidate.tokens) + " tokens)");
  }
  ImageAgreement a;
  for (int64_t t = 0; t < reference.tokens; ++t) {
    const float* r = reference.values.data() + t * reference.width;
    const float* c = candidate.values.data() + t * reference.width;
    double dot = 0, rr = 0, cc = 0;
    for (int64_t j = 0; j < reference.width; ++j) {
      dot += static_cast<double>(r[j]) * c[j];
      rr += static_cast<double>(r[j]) * r[j];
      cc += static_cast<double>(c[j]) * c[j];
    }
    const double cosine = rr > 0 && cc > 0 ? dot / std::sqrt(rr * cc) : (rr == cc ? 1.0 : 0.0);
    a.tokens += 1;
    a.min_cosine = std::min(a.min_cosine, cosine);
    a.sum_cosine += cosine;
  }
  return a;
}

bool QualityReport::keeps_greedy_tokens() const {
  return std::all_of(prompts.begin(), prompts.end(), [](const PromptAgreement& p) {
    return p.greedy_prefix == p.continuation_length;
  });
}

QualityReport measure_agreement(Engine& candidate, const std::vector<QualityPrompt>& prompts,
                                const ReferenceLogits& reference) {
  if (prompts.size() != reference.prompts()) {
    fail(ErrorCode::kInvalidArgument, "the reference logits were recorded for " +
                                          std::to_string(reference.prompts()) + " prompts, not " +
                                          std::to_string(prompts.size()));
  }
  if (candidate.info().vocab_size != reference.vocab()) {
    fail(ErrorCode::kInvalidArgument,
         "the candidate's vocabulary (" + std::to_string(candidate.info().vocab_size) +
             ") differs from the reference's (" + std::to_string(reference.vocab()) + ")");
  }
  QualityReport report;
  for (size_t k = 0; k < prompts.size(); ++k) {
    const QualityPrompt& p = prompts[k];
    PromptAgreement a;
    a.name = p.name;
    a.continuation_length = static_cast<int64_t>(p.continuation.size());
    bool prefix_intact = true;
    const ScoreResult r =
        candidate.score(p.request, p.continuation, [&](int64_t index, const float* row) {
          const LogitComparison c = compare_logits(reference.row(k, index), row, reference.vocab());
          a.stats.add(c);
          if (index >= a.continuation_length) return;
          const bool kept = c.candidate_top1 == p.continuation[index];
          a.continuation_top1 += kept ? 1 : 0;
          prefix_intact = prefix_intact && kept;
          a.greedy_prefix += prefix_intact ? 1 : 0;
        });
    if (r.prompt_ids != reference.prompt_ids(k)) {
      fail(ErrorCode::kInvalidArgument, "prompt '" + p.name +
                                            "': the candidate model builds different prompt "
                                            "ids than the reference (other tokenizer or image "
                                            "budget?)");
    }
    for (size_t i = 0; i < p.request.images.size(); ++i) {
      a.images.merge(compare_image_embeddings(reference.images(k)[i],
                                              candidate.embed_image(p.request.images[i])));
    }
    a.prompt_tokens = static_cast<int64_t>(r.prompt_ids.size());
    a.image_tokens = r.image_tokens;
    report.total.merge(a.stats);
    report.images.merge(a.images);
    report.prompts.push_back(std::move(a));
  }
  return report;
}

}  // namespace qvl
