#include "cli/prometheus_text.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace qvl::cli {
namespace {

// End of the sample name including a {label="value",...} block; npos if the block is unclosed.
size_t end_of_sample_name(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && !std::isspace(static_cast<unsigned char>(line[i]))) {
    ++i;
  }
  if (i == line.size() || line[i] != '{') return i;
  bool quoted = false;
  for (++i; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '\\') {
      ++i;  // an escaped character inside a label value
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == '}') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

bool parse_value(std::string_view token, double& out) {
  const std::string text(token);
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);  // also takes NaN, +Inf and -Inf
  return end == text.c_str() + text.size();
}

}  // namespace

std::map<std::string, double> parse_prometheus_text(std::string_view text) {
  std::map<std::string, double> samples;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const size_t name_end = end_of_sample_name(line);
    if (name_end == 0 || name_end == std::string_view::npos || name_end == line.size()) continue;
    std::string_view rest = line.substr(name_end);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) {
      rest.remove_prefix(1);
    }
    const std::string_view value_token = rest.substr(0, rest.find_first_of(" \t"));
    double value = 0;
    if (parse_value(value_token, value)) samples[std::string(line.substr(0, name_end))] = value;
  }
  return samples;
}

std::vector<MetricChange> changed_samples(const std::map<std::string, double>& before,
                                          const std::map<std::string, double>& after,
                                          std::string_view prefix) {
  std::vector<MetricChange> changes;
  for (const auto& [sample, value] : after) {
    if (sample.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string_view name = std::string_view(sample).substr(0, sample.find('{'));
    if (name.ends_with("_bucket")) continue;
    const auto it = before.find(sample);
    const double old_value = it == before.end() ? 0.0 : it->second;
    const bool same = old_value == value || (std::isnan(old_value) && std::isnan(value));
    if (it == before.end() || !same) changes.push_back({sample, old_value, value});
  }
  return changes;
}

}  // namespace qvl::cli
