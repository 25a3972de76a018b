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

// How many draft tokens a sequence may try next. Drafts pay off when the model agrees with
// them and the step's extra rows cost little (decode reads the weights once for all rows: on an
// idle machine rows are nearly free, on a busy one or at high batch they are not). So the policy
// measures both: the cap doubles after a step that accepted every draft and halves after one
// that accepted none; and it compares tokens per millisecond of its drafted steps with its plain
// ones (steps with nothing to draft, and pauses). At a cap of zero, or when drafting is the
// slower, the sequence decodes plainly for a pause (16 steps, doubling while drafting keeps
// losing, up to 256), then tries one token again.
class DraftPolicy {
 public:
  // The cap for the next step, within `room`.
  int64_t cap(int64_t room);
  // What the last step came to: `drafted` tokens tried (0: a plain step), `accepted` of them
  // taken, in a step of `step_ms` (its decode rows' forward).
  void record(int64_t drafted, int64_t accepted, double step_ms);

  static constexpr int64_t kFirstPause = 16, kLongestPause = 256;

 private:
  void pause();

  int64_t cap_ = 4;
  int64_t paused_ = 0;  // plain steps left before trying again
  int64_t pause_length_ = kFirstPause;
  // Tokens per millisecond (moving averages; 0: none seen yet) and drafted steps since a pause.
  double draft_rate_ = 0, plain_rate_ = 0;
  int64_t drafted_steps_ = 0;
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
