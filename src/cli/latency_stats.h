// Order statistics of measured times (token gaps, time to first token).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace qvl::cli {

// The p-th percentile (0..100) with linear interpolation between the closest ranks (the
// "linear" method of numpy.percentile); NaN for no values.
double percentile(std::vector<double> values, double p);

inline double median(std::vector<double> values) {
  return percentile(std::move(values), 50);
}

// Differences between consecutive times (times in arrival order).
std::vector<double> successive_gaps(const std::vector<double>& times);

struct LatencySummary {
  size_t count = 0;
  double median = 0, p90 = 0, p99 = 0, max = 0;  // NaN when count == 0
};

LatencySummary summarize(const std::vector<double>& values);

}  // namespace qvl::cli
