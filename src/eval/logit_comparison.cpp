#include "eval/logit_comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/scoring.h"

namespace qvl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t argmax(const float* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

double second_largest(const float* v, int64_t n, int64_t top) {
  double second = -kInf;
  for (int64_t i = 0; i < n; ++i)
    if (i != top) second = std::max(second, static_cast<double>(v[i]));
  return second;
}

}  // namespace

LogitComparison compare_logits(const float* reference, const float* candidate, int64_t n) {
  LogitComparison c;
  c.reference_top1 = argmax(reference, n);
  c.candidate_top1 = argmax(candidate, n);
  const double lse_ref = log_sum_exp(reference, n);
  const double lse_cand = log_sum_exp(candidate, n);
  c.reference_margin =
      n > 1 ? reference[c.reference_top1] - second_largest(reference, n, c.reference_top1) : kInf;
  double kl = 0, max_diff = 0, entropy = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double diff = std::fabs(static_cast<double>(reference[i]) - candidate[i]);
    max_diff = std::isnan(diff) ? kInf : std::max(max_diff, diff);
    const double log_p = reference[i] - lse_ref;
    const double p = std::exp(log_p);
    if (p == 0) continue;  // contributes nothing, even where the candidate says -inf
    kl += p * (log_p - (candidate[i] - lse_cand));
    entropy -= p * log_p;
  }
  // Rounding can leave identical distributions a hair below zero; NaN means broken logits.
  c.kl = std::isnan(kl) ? kInf : std::max(kl, 0.0);
  c.max_abs_diff = max_diff;
  c.reference_entropy = entropy;
  return c;
}

void AgreementStats::add(const LogitComparison& c) {
  min_reference_margin =
      positions == 0 ? c.reference_margin : std::min(min_reference_margin, c.reference_margin);
  reference_entropy_sum += c.reference_entropy;
  ++positions;
  if (c.top1_agrees()) ++top1_matches;
  kl_sum += c.kl;
  kl_max = std::max(kl_max, c.kl);
  max_abs_diff = std::max(max_abs_diff, c.max_abs_diff);
}

void AgreementStats::merge(const AgreementStats& other) {
  if (other.positions == 0) return;
  min_reference_margin = positions == 0
                             ? other.min_reference_margin
                             : std::min(min_reference_margin, other.min_reference_margin);
  reference_entropy_sum += other.reference_entropy_sum;
  positions += other.positions;
  top1_matches += other.top1_matches;
  kl_sum += other.kl_sum;
  kl_max = std::max(kl_max, other.kl_max);
  max_abs_diff = std::max(max_abs_diff, other.max_abs_diff);
}

double AgreementStats::top1_rate() const {
  return positions == 0 ? 1.0 : static_cast<double>(top1_matches) / positions;
}

double AgreementStats::mean_kl() const {
  return positions == 0 ? 0.0 : kl_sum / positions;
}

double AgreementStats::mean_reference_entropy() const {
  return positions == 0 ? 0.0 : reference_entropy_sum / positions;
}

}  // namespace qvl
