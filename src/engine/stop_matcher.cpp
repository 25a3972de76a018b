#include "engine/stop_matcher.h"

#include <algorithm>

namespace qvl {
namespace {

// Moves `pos` back to the start of the UTF-8 character it falls in.
size_t character_start(const std::string& text, size_t pos) {
  while (pos > 0 && pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80)
    --pos;
  return pos;
}

std::vector<size_t> failure_table(const std::string& s) {
  std::vector<size_t> failure(s.size(), 0);
  for (size_t i = 1; i < s.size(); ++i) {
    size_t k = failure[i - 1];
    while (k > 0 && s[i] != s[k]) k = failure[k - 1];
    if (s[i] == s[k]) ++k;
    failure[i] = k;
  }
  return failure;
}

}  // namespace

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  std::sort(stops.begin(), stops.end());
  stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
  for (std::string& stop : stops) {
    if (stop.empty()) continue;
    Pattern pattern;
    pattern.failure = failure_table(stop);
    pattern.text = std::move(stop);
    patterns_.push_back(std::move(pattern));
  }
}

StopMatcher::Result StopMatcher::feed(std::string_view delta) {
  Result result;
  if (stopped_) {
    result.stopped = true;
    return result;
  }
  if (patterns_.empty()) {
    result.text.assign(delta);
    return result;
  }
  // Byte-wise KMP: each pattern tracks the longest prefix of it that the text ends with, so
  // the work is linear in the text whatever the stop strings look like.
  for (char c : delta) {
    held_.push_back(c);
    const Pattern* completed = nullptr;
    for (Pattern& p : patterns_) {
      size_t m = p.matched;
      while (m > 0 && p.text[m] != c) m = p.failure[m - 1];
      if (p.text[m] == c) ++m;
      p.matched = m;
      // Several may complete on the same byte: the longest starts earliest, so hide it all.
      if (m == p.text.size() && (!completed || m > completed->text.size())) completed = &p;
    }
    if (completed) {
      stopped_ = true;
      matched_ = completed->text;
      result.text = held_.substr(0, character_start(held_, held_.size() - matched_.size()));
      result.stopped = true;
      held_.clear();
      return result;
    }
  }
  size_t hold = 0;
  for (const Pattern& p : patterns_) hold = std::max(hold, p.matched);
  const size_t cut = character_start(held_, held_.size() - hold);
  result.text = held_.substr(0, cut);
  held_.erase(0, cut);
  return result;
}

std::string StopMatcher::flush() {
  std::string rest;
  rest.swap(held_);
  for (Pattern& p : patterns_) p.matched = 0;
  if (stopped_) return {};
  return rest;
}

}  // namespace qvl
