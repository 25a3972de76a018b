// Stop strings for streamed generation: text goes in as deltas, text that can no longer be
// part of a stop string comes out. Generation ends at the first byte that completes any stop
// string; that stop string and everything after it are never emitted.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

class StopMatcher {
 public:
  struct Result {
    std::string text;      // safe to emit now (whole UTF-8 characters)
    bool stopped = false;  // a stop string is complete: end generation
  };

  // Empty stop strings are ignored (they would stop before any text); duplicates are merged.
  // With no stop strings, every delta passes through at once.
  explicit StopMatcher(std::vector<std::string> stops);

  // Feeds the next piece of generated text (whole UTF-8 characters). Text that might be the
  // start of a stop string is held back until it is resolved. After a stop, returns
  // {"", true} forever.
  Result feed(std::string_view delta);

  // End of generation without a stop: returns the held-back text ("" after a stop).
  std::string flush();

  bool stopped() const { return stopped_; }
  // The stop string that ended generation; empty if none did.
  const std::string& matched() const { return matched_; }
  // Bytes currently held back.
  size_t held_bytes() const { return held_.size(); }

 private:
  // A stop string with its KMP failure table and how much of it the text currently ends with.
  struct Pattern {
    std::string text;
    std::vector<size_t> failure;  // failure[i]: longest proper border of text[0..i]
    size_t matched = 0;
  };

  std::vector<Pattern> patterns_;
  std::string held_;  // fed but not yet emitted
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace qvl
