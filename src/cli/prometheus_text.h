// Reads the samples of a Prometheus text exposition (what GET /metrics returns) so that the load
// generator can show which server counters a scenario moved.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::cli {

// Sample name with its labels exactly as written (e.g. `qvl_requests_total{status="200"}`) ->
// value. Comments, blank lines and lines that are not "name value [timestamp]" are skipped.
std::map<std::string, double> parse_prometheus_text(std::string_view text);

struct MetricChange {
  std::string sample;
  double before = 0;  // 0 when the sample did not exist before
  double after = 0;
};

// Samples whose name starts with prefix and whose value changed (or appeared), in name order.
// Histogram buckets are left out: their _count and _sum say the same more briefly.
std::vector<MetricChange> changed_samples(const std::map<std::string, double>& before,
                                          const std::map<std::string, double>& after,
                                          std::string_view prefix);

}  // namespace qvl::cli
