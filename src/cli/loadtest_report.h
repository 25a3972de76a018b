// What one load-test scenario measured: numbers (for the table and the JSON), the serving
// targets they are held to, refused requests and failures.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/prometheus_text.h"

namespace qvl::cli {

struct Target {
  std::string metric;   // a key of ScenarioResult::numbers
  bool at_most = true;  // value <= bound, else value >= bound
  double bound = 0;
  double value = 0;
  bool met() const;  // false for NaN
};

struct ScenarioResult {
  explicit ScenarioResult(std::string scenario_name) : name(std::move(scenario_name)) {}

  // A number shown as a table row and stored under key in the JSON.
  void measure(const std::string& key, const std::string& label, double value);
  // A target on a number measured before.
  void add_target(const std::string& key, bool at_most, double bound);
  // Counts a response by HTTP status (0: no response).
  void count_status(long status) { ++responses_by_status[status]; }
  // passed: no failures and every target met.
  bool passed() const;
  nlohmann::json to_json() const;

  std::string name;
  nlohmann::json numbers = nlohmann::json::object();
  std::vector<std::pair<std::string, std::string>> rows;  // key, label in measuring order
  std::vector<Target> targets;
  std::map<long, int> responses_by_status;
  std::vector<std::string> failures;         // requests that went wrong: the run is not trustworthy
  std::vector<std::string> notes;            // things worth knowing (refusals, short answers)
  std::vector<MetricChange> metric_changes;  // qvl_* samples of /metrics the scenario moved
};

// Human-readable table of all scenarios.
std::string format_table(const std::vector<ScenarioResult>& results);

}  // namespace qvl::cli
