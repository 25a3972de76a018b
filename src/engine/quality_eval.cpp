#include "engine/quality_eval.h"

#include <algorithm>

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
  }
  return out;
}

const float* ReferenceLogits::row(size_t prompt, int64_t index) const {
  QVL_CHECK(prompt < rows_.size());
  QVL_CHECK(index >= 0 && (index + 1) * vocab_ <= static_cast<int64_t>(rows_[prompt].size()));
  return rows_[prompt].data() + index * vocab_;
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
    a.prompt_tokens = static_cast<int64_t>(r.prompt_ids.size());
    a.image_tokens = r.image_tokens;
    report.total.merge(a.stats);
    report.prompts.push_back(std::move(a));
  }
  return report;
}

}  // namespace qvl
