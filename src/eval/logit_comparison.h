// How far one next-token distribution is from another: the numbers that say whether a fast
// weight type still predicts what the exact model predicts.
#pragma once

#include <cstdint>

namespace qvl {

struct LogitComparison {
  double kl = 0;  // KL(reference || candidate) over the full softmax, in nats; +inf for NaN
  int64_t reference_top1 = -1;
  int64_t candidate_top1 = -1;
  double max_abs_diff = 0;  // largest |reference[i] - candidate[i]| (raw logits, no shift)
  // How decided the reference is: its top1 - top2 logit gap (a flip needs errors about this
  // large) and its entropy in nats (log(vocab) for a uniform distribution).
  double reference_margin = 0;
  double reference_entropy = 0;
  bool top1_agrees() const { return reference_top1 == candidate_top1; }
};

LogitComparison compare_logits(const float* reference, const float* candidate, int64_t n);

// Running totals over many positions (the comparison itself is streamed, one row at a time).
struct AgreementStats {
  int64_t positions = 0;
  int64_t top1_matches = 0;
  double kl_sum = 0;
  double kl_max = 0;
  double max_abs_diff = 0;
  double min_reference_margin = 0;  // over all positions (0 when there are none)
  double reference_entropy_sum = 0;

  void add(const LogitComparison& c);
  void merge(const AgreementStats& other);
  double top1_rate() const;  // 1 when there are no positions
  double mean_kl() const;
  double mean_reference_entropy() const;
};

}  // namespace qvl
