// Speculative decoding's drafts: tokens guessed for a sequence's next steps, verified together
// in one batched step (each row computed exactly as a one-row decode step would be, so the answer
// is the same bits; engine/scheduler.cpp). Two sources: prompt lookup (the text after the latest
// earlier occurrence of the context's last few tokens: OCR corrections, "convert to Markdown",
// values copied from a document into JSON) and the grammar's forced continuation (jump-forward:
// property names and punctuation a schema leaves no choice about).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qvl {

// Appends to `draft` (at most `max` tokens) what followed the latest earlier occurrence of the
// last n tokens of prompt + completion, for the longest n in [min_ngram, max_ngram] that occurs.
// Tokens for which `stop_at` is true end the draft (image pads, special tokens).
template <typename StopAt>
void prompt_lookup_draft(std::span<const int64_t> prompt, std::span<const int64_t> completion,
                         int64_t min_ngram, int64_t max_ngram, int64_t max, StopAt stop_at,
                         std::vector<int64_t>& draft);

// How many draft tokens a sequence may try next, from how its drafts fared: the cap doubles
// after a step that accepted all of them and halves after one that accepted none; at zero the
// sequence decodes plainly for a while, then tries one token again. A draft that is rejected
// costs its rows in the step, so a sequence whose guesses keep failing soon stops paying that.
class DraftPolicy {
 public:
  // The cap for the next step, within `room`.
  int64_t cap(int64_t room);
  // What the last step's draft of `drafted` tokens came to.
  void record(int64_t drafted, int64_t accepted);

  static constexpr int64_t kPauseSteps = 16;

 private:
  int64_t cap_ = 4;
  int64_t paused_ = 0;  // plain steps left before trying again
};

template <typename StopAt>
void prompt_lookup_draft(std::span<const int64_t> prompt, std::span<const int64_t> completion,
                         int64_t min_ngram, int64_t max_ngram, int64_t max, StopAt stop_at,
                         std::vector<int64_t>& draft) {
  const int64_t np = static_cast<int64_t>(prompt.size());
  const int64_t length = np + static_cast<int64_t>(completion.size());
  const auto at = [&](int64_t i) { return i < np ? prompt[i] : completion[i - np]; };
  if (max <= 0) return;
  for (int64_t n = std::min(max_ngram, length - 1); n >= min_ngram; --n) {
    // Latest start i < length - n of the last n tokens.
    for (int64_t i = length - n - 1; i >= 0; --i) {
      int64_t k = 0;
      while (k < n && at(i + k) == at(length - n + k)) ++k;
      if (k < n) continue;
      for (int64_t j = i + n; j < length && static_cast<int64_t>(draft.size()) < max; ++j) {
        if (stop_at(at(j))) break;
        draft.push_back(at(j));
      }
      return;
    }
  }
}

}  // namespace qvl
