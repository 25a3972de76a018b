// The "Split" pre-tokenizer of tokenizer.json (behaviour "Isolated"): a regex cuts text into
// pieces; every match and every gap between matches is one piece. The pattern comes from the
// tokenizer file and is compiled once with PCRE2 (UTF + Unicode properties + JIT).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

class SplitPretokenizer {
 public:
  // Throws Error(kCorrupt) naming the pattern if it does not compile.
  explicit SplitPretokenizer(const std::string& pattern);
  ~SplitPretokenizer();
  SplitPretokenizer(SplitPretokenizer&&) noexcept;
  SplitPretokenizer& operator=(SplitPretokenizer&&) noexcept;

  // Appends the pieces of `text` (valid UTF-8) to `pieces`; they view into `text`.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

// Rewrites the Oniguruma/Python spelling of a pattern into PCRE2's: `\s` and `\S` become
// `\p{White_Space}` / `\P{White_Space}` (PCRE2's own \s also matches U+180E, Python's and
// Rust's do not). Exposed for tests.
std::string translate_split_pattern(const std::string& pattern);

}  // namespace qvl
