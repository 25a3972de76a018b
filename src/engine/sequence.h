// One generation request inside the scheduler: its prepared prompt, its pages of the KV cache,
// its sampler and its output so far.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "base/timer.h"
#include "engine/draft_tokens.h"
#include "engine/kv_pool.h"
#include "engine/output_constraint.h"
#include "engine/prefill_chunk.h"
#include "engine/prompt_embeddings.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "model/rope_index.h"
#include "qvl/engine.h"
#include "tokenizer/incremental_decoder.h"

namespace qvl {

struct Sequence {
  Sequence(const Tokenizer& tokenizer, const SamplingParams& sampling)
      : sampler(sampling),
        stops(sampling.stop),
        detok(tokenizer, /*skip_special_tokens=*/true),
        tokenizer(tokenizer) {}

  // Input, prepared by the caller.
  std::vector<uint64_t> keys;  // per prompt position: the token id, or an image pad's identity
  RopePositions positions;
  PromptEmbeddings prompt;  // made chunk by chunk; dropped once in the KV cache
  int64_t max_new = 0;
  TextCallback on_text;
  int64_t top_logprobs = -1;  // -1: none; else GenerationResult::logprobs with that many top
  LogprobsCallback on_logprobs;
  const std::atomic<bool>* cancel = nullptr;
  Timer started;  // the generate() call

  // Scheduler state.
  std::unique_ptr<PagedSequence> kv;
  int64_t prompt_done = 0;     // prompt positions in the KV cache (reused or computed)
  PrefillChunk chunk;          // prompt rows being computed (over one or more steps)
  int64_t pending_token = -1;  // sampled, to be fed in the next step
  int64_t draft_tokens = -1;   // GenerationRequest::draft_tokens
  std::vector<int64_t> draft;  // guessed tokens after pending_token, verified in this step
  DraftPolicy draft_policy;
  bool admitted = false;
  bool done = false;      // ended; scheduler thread only
  bool finished = false;  // handed back to the caller (guarded by the scheduler's mutex)
  bool callback_stopped = false;
  std::exception_ptr error;
  Timer prefill_timer, decode_timer;

  Sampler sampler;
  std::unique_ptr<TokenConstraint> constraint;  // constrained decoding, when asked for
  // A Thinking model's "</think>" id while its reasoning is open (the generation prompt opened
  // it): the constraint applies to the answer after it. -1: no reasoning (any more).
  int64_t think_end_id = -1;
  StopMatcher stops;
  IncrementalDecoder detok;
  GenerationResult result;
  const Tokenizer& tokenizer;

  // Appends the log-probabilities of `token` (and the top alternatives) at this step to the
  // result and hands them to on_logprobs; `logits` are the model's raw ones.
  void record_logprobs(const float* logits, int64_t vocab, int64_t token);

  int64_t prompt_length() const { return positions.n; }
  bool prefilling() const { return prompt_done < prompt_length(); }
};

// Cache key of a prompt position: token ids as they are; image pads name their image (digest and
// budget) and their row within it, so equal text with another picture never shares a prefix.
uint64_t image_pad_key(uint64_t image_identity, int64_t row);

}  // namespace qvl
