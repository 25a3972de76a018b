#include "cli/loadtest_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace qvl::cli {
namespace {

using nlohmann::json;

std::string format_number(double value) {
  if (!std::isfinite(value)) return "n/a";
  char text[32];
  const double magnitude = std::fabs(value);
  std::snprintf(text, sizeof text,
                magnitude >= 100 ? "%.1f"
                : magnitude >= 1 ? "%.2f"
                                 : "%.3f",
                value);
  return text;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

bool Target::met() const {
  if (!std::isfinite(value)) return false;
  return at_most ? value <= bound : value >= bound;
}

void ScenarioResult::measure(const std::string& key, const std::string& label, double value) {
  numbers[key] = value;  // NaN is written as null
  rows.emplace_back(key, label);
}

void ScenarioResult::add_target(const std::string& key, bool at_most, double bound) {
  const auto value = numbers.find(key);
  const bool known = value != numbers.end() && value->is_number();
  targets.push_back({key, at_most, bound, known ? value->get<double>() : NAN});
}

bool ScenarioResult::passed() const {
  if (!failures.empty()) return false;
  for (const Target& target : targets) {
    if (!target.met()) return false;
  }
  return true;
}

json ScenarioResult::to_json() const {
  json out = numbers;
  out["scenario"] = name;
  json target_list = json::array();
  for (const Target& t : targets) {
    target_list.push_back({{"metric", t.metric},
                           {"op", t.at_most ? "<=" : ">="},
                           {"bound", t.bound},
                           {"value", t.value},
                           {"met", t.met()}});
  }
  out["targets"] = target_list;
  out["pass"] = passed();
  json statuses = json::object();
  for (const auto& [status, count] : responses_by_status) statuses[std::to_string(status)] = count;
  out["responses_by_status"] = statuses;
  out["failures"] = failures;
  out["notes"] = notes;
  json changes = json::object();
  for (const MetricChange& change : metric_changes) {
    changes[change.sample] = {{"before", change.before}, {"after", change.after}};
  }
  out["metrics_changed"] = changes;
  return out;
}

std::string format_table(const std::vector<ScenarioResult>& results) {
  std::ostringstream out;
  out << pad("scenario", 14) << pad("measure", 50) << pad("value", 12) << pad("target", 12)
      << "result\n";
  for (const ScenarioResult& r : results) {
    bool first = true;
    for (const auto& [key, label] : r.rows) {
      const json& value = r.numbers.at(key);
      std::string target_text, verdict;
      for (const Target& t : r.targets) {
        if (t.metric != key) continue;
        target_text = std::string(t.at_most ? "<= " : ">= ") + format_number(t.bound);
        verdict = t.met() ? "PASS" : "FAIL";
      }
      out << pad(first ? r.name : "", 14) << pad(label, 50)
          << pad(format_number(value.is_number() ? value.get<double>() : NAN), 12)
          << pad(target_text, 12) << verdict << "\n";
      first = false;
    }
    if (first) out << r.name << "\n";
    std::string statuses;
    for (const auto& [status, count] : r.responses_by_status) {
      statuses += " " + (status == 0 ? std::string("no-response") : std::to_string(status)) + "x" +
                  std::to_string(count);
    }
    out << pad("", 14) << "responses:" << statuses << "\n";
    for (const std::string& failure : r.failures)
      out << pad("", 14) << "FAILURE: " << failure << "\n";
    for (const std::string& note : r.notes) out << pad("", 14) << "note: " << note << "\n";
    for (const MetricChange& change : r.metric_changes) {
      out << pad("", 14) << "/metrics " << change.sample << ": " << format_number(change.before)
          << " -> " << format_number(change.after) << "\n";
    }
  }
  return out.str();
}

}  // namespace qvl::cli
