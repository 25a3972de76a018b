// Continuous batching: one thread steps every running sequence together. Each step is one forward
// over the next token of every decoding sequence plus a chunk of one prompt being prefilled, so the
// weights are read once per step for the whole batch and a long new prompt never freezes the
// streams already running. Admission reserves each sequence's worst case of KV pages (prompt plus
// max_new tokens) so a running sequence never runs out; a prompt that starts like cached pages
// reuses them and prefills only the rest.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/kv_pool.h"
#include "engine/prefill_chunk.h"
#include "engine/sequence.h"
#include "engine/turn_lock.h"
#include "model/config.h"
#include "model/text_decoder.h"

namespace qvl {

struct SchedulerOptions {
  // Prompt positions per chunk while other sequences decode, and when the prompt runs alone.
  // Any chunking of 16 rows or more computes a prompt the same way (engine/prefill_chunk.h).
  int64_t prefill_chunk = 64;
  // Alone, 512: every chunk repacks each weight matrix for the int8 GEMM once, and halving the
  // repacks of a 512-token prompt is 8-10% of its time (q8, AVX-512) for ~20 MB of activations.
  int64_t prefill_chunk_alone = 512;
  // While others decode, a step spends about this share of the decode rows' time on the chunk's
  // layers (at least one layer), so a new prompt slows running streams by at most that much.
  double prefill_share = 1.0;
  int64_t max_running = 16;  // sequences admitted at once; the rest wait in order
  // Speculative decoding (engine/draft_tokens.h): at most this many draft tokens per sequence and
  // step, and only while all decoding rows of a step fit in one weight pass (kMaxDecodeRows).
  int64_t draft_tokens = 0;
  bool prompt_lookup = true;  // drafts from the prompt and the answer so far
  bool jump_forward = true;   // drafts from a response format's forced text
  static constexpr int64_t kMinNgram = 2, kMaxNgram = 4;
  // Free KV pages kept and made resident when the scheduler goes idle (KVPool::warm_up).
  int64_t idle_warm_kv_pages = 0;
};

// Upper bounds of the histogram buckets (the last bucket is unbounded).
inline constexpr std::array<double, 6> kBatchSizeBuckets = {1, 2, 4, 8, 16, 32};
inline constexpr std::array<double, 8> kQueueWaitBuckets = {0.001, 0.01, 0.1, 0.5, 1, 5, 30, 120};

struct SchedulerStats {
  uint64_t steps = 0;
  int64_t running = 0;
  int64_t waiting = 0;
  // Sequences per step (decode rows plus the prefilling one).
  std::array<uint64_t, kBatchSizeBuckets.size() + 1> batch_size_counts{};
  double batch_size_sum = 0;
  // Seconds from submission to admission.
  std::array<uint64_t, kQueueWaitBuckets.size() + 1> queue_wait_counts{};
  double queue_wait_sum = 0;
  KVPoolStats kv;
};

class Scheduler {
 public:
  Scheduler(TextDecoder& decoder, const ModelConfig& config, std::vector<int64_t> eos_ids,
            KVPool& pool, TurnLock& turn, const SchedulerOptions& options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Runs a prepared sequence to its end; blocks the caller while on_text is called from the
  // scheduler's thread. Rethrows the error that ended the sequence, if any.
  void run(Sequence& seq);
  SchedulerStats stats() const;
  // Milliseconds the last step spent on decode rows (0 when none decoded): how long other work
  // (the vision tower) may hold the model between two steps without slowing the streams much.
  double decode_step_ms() const { return decode_step_ms_.load(std::memory_order_relaxed); }

 private:
  void loop();
  void admit(std::vector<Sequence*>& running);
  void step(std::vector<Sequence*>& running);
  // Samples the next token from logits and emits text; may finish the sequence.
  void advance(Sequence& s, float* logits);  // logits may be masked in place
  // Fills s.draft for this step, at most `room` tokens.
  void propose_drafts(Sequence& s, int64_t room);
  // Advances over a decoding sequence's rows of the step (its token, then its drafts while the
  // model agrees with them) and commits the rows whose input turned out right. `step_ms`: the
  // step's decode forward, for the sequence's draft policy.
  void advance_rows(Sequence& s, float* logits, double step_ms);
  void finish(Sequence& s, FinishReason reason);
  // Removes ended sequences from `running` and hands them back to their callers (the last time
  // the scheduler touches them).
  void retire(std::vector<Sequence*>& running);
  void fail_sequence(Sequence& s, std::exception_ptr error);
  int64_t reserved_pages(const Sequence& s) const;

  TextDecoder& decoder_;
  const ModelConfig& config_;
  std::vector<int64_t> eos_;
  KVPool& pool_;
  TurnLock& turn_;
  SchedulerOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;      // new work or stop
  std::condition_variable finished_;  // a sequence ended
  std::deque<Sequence*> waiting_;
  bool stop_ = false;
  SchedulerStats stats_;  // guarded by mutex_
  std::atomic<double> decode_step_ms_{0};
  std::thread thread_;

  // Step buffers (scheduler thread only).
  std::vector<float> x_, hidden_, logits_, chunk_out_;
  std::vector<int64_t> positions_;
  std::vector<int64_t> row_of_;  // first batch row of each decoding sequence
  std::vector<BatchEntry> entries_;
  std::vector<Sequence*> batch_;
};

}  // namespace qvl
