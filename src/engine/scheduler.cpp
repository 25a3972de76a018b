#include "engine/scheduler.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/error.h"
#include "base/heap_trim.h"
#include "base/log.h"
#include "base/stage_profile.h"
#include "base/timer.h"
#include "ops/attention.h"

namespace qvl {

// Steps longer than this are logged (debug): they show up as gaps in every running stream.
constexpr double kSlowStepMs = 1000;
constexpr size_t kKeptAttentionScratchBytes = size_t{16} << 20;
namespace {

template <size_t N>
void observe(std::array<uint64_t, N + 1>& counts, double& sum, const std::array<double, N>& bounds,
             double value) {
  size_t bucket = 0;
  while (bucket < N && value > bounds[bucket]) ++bucket;
  ++counts[bucket];
  sum += value;
}

}  // namespace

Scheduler::Scheduler(TextDecoder& decoder, const ModelConfig& config, std::vector<int64_t> eos_ids,
                     KVPool& pool, TurnLock& turn, const SchedulerOptions& options)
    : decoder_(decoder),
      config_(config),
      eos_(std::move(eos_ids)),
      pool_(pool),
      turn_(turn),
      options_(options) {
  QVL_CHECK(options_.prefill_chunk >= kMinPrefillChunk &&
            options_.prefill_chunk_alone >= kMinPrefillChunk && options_.max_running > 0);
  stats_.kv = pool_.stats();
  pool_.set_map_whole_pages(options_.idle_warm_kv_pages > 0);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Scheduler::run(Sequence& seq) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_) fail(ErrorCode::kCancelled, "the engine is shutting down");
  waiting_.push_back(&seq);
  wake_.notify_all();
  finished_.wait(lock, [&] { return seq.finished; });
  if (seq.error) std::rethrow_exception(seq.error);
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SchedulerStats s = stats_;
  s.waiting = static_cast<int64_t>(waiting_.size());
  return s;
}

int64_t Scheduler::reserved_pages(const Sequence& s) const {
  return pool_.pages_for(s.prompt_length() + s.max_new);
}

void Scheduler::loop() {
  std::vector<Sequence*> running;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !waiting_.empty() || !running.empty(); });
      if (stop_ && running.empty()) {
        for (Sequence* s : waiting_) {
          s->error =
              std::make_exception_ptr(Error(ErrorCode::kCancelled, "the engine is shutting down"));
          s->finished = true;
        }
        waiting_.clear();
        finished_.notify_all();
        return;
      }
      admit(running);
      stats_.running = static_cast<int64_t>(running.size());
    }
    if (!running.empty()) {
      step(running);
      // Idle now: what the finished requests' prompts, images and KV pages used goes back to the
      // system, but for the KV pages a chat's next question takes first (a page given back costs
      // ~15-30 ms to map in again in a VM: most of a follow-up's time to first token).
      if (running.empty()) {
        pool_.release_free_memory(options_.idle_warm_kv_pages);
        // Warming a fresh page takes ~15-30 ms: it gives way to a request that arrives meanwhile
        // (a chat's next question, sent as soon as the answer is read), which would wait for it.
        pool_.warm_up(options_.idle_warm_kv_pages, [this] {
          std::lock_guard<std::mutex> lock(mutex_);
          return stop_ || !waiting_.empty();
        });
        // This thread's prompt-sized K/V panels, unless a chat's (up to ~2000 positions).
        ops::release_attention_scratch(kKeptAttentionScratchBytes);
        return_free_heap_to_os();
      }
    }
  }
}

// Called with mutex_ held.
void Scheduler::admit(std::vector<Sequence*>& running) {
  while (!waiting_.empty() && static_cast<int64_t>(running.size()) < options_.max_running) {
    Sequence& s = *waiting_.front();
    const int64_t n = s.prompt_length();
    const int64_t capacity = pool_.total_pages() * pool_.page_rows();
    if (n + 1 > capacity) {
      waiting_.pop_front();
      s.error = std::make_exception_ptr(
          Error(ErrorCode::kResourceExhausted,
                "the prompt has " + std::to_string(n) + " tokens but the KV cache holds " +
                    std::to_string(capacity) + " positions (" +
                    std::to_string((pool_.total_pages() * pool_.stats().page_bytes) >> 20) +
                    " MiB); shorten the conversation, use fewer or smaller images, or raise "
                    "--kv-cache-mb"));
      s.finished = true;
      finished_.notify_all();
      continue;
    }
    // An answer can grow at most to the whole pool (then it ends as if max_tokens were hit).
    s.max_new = std::min(s.max_new, capacity - n);
    const int64_t total = reserved_pages(s);
    // Pages the running sequences may still claim.
    int64_t outstanding = 0;
    for (const Sequence* r : running) outstanding += reserved_pages(*r) - r->kv->pages();
    // At least the last prompt position is computed: its logits start the answer.
    KVPool::Match match = pool_.lookup(s.keys.data(), n - 1);
    const int64_t need = total - static_cast<int64_t>(match.pages.size());
    if (need + outstanding > pool_.available_pages()) {
      for (int32_t p : match.pages) pool_.release(p);
      break;  // first come, first served: wait for pages to come back
    }
    waiting_.pop_front();
    s.kv = std::make_unique<PagedSequence>(pool_);
    s.kv->push_keys(s.keys.data(), n);
    s.prompt_done = match.matched;
    s.result.stats.cached_tokens = match.matched;
    s.kv->adopt(std::move(match));
    s.admitted = true;
    s.prefill_timer.reset();
    observe<kQueueWaitBuckets.size()>(stats_.queue_wait_counts, stats_.queue_wait_sum,
                                      kQueueWaitBuckets, s.started.seconds());
    running.push_back(&s);
  }
}

void Scheduler::step(std::vector<Sequence*>& running) {
  const int64_t hidden = config_.text.hidden_size, vocab = config_.text.vocab_size;
  // Cancelled sequences leave before the step.
  for (Sequence* s : running) {
    if (s->cancel != nullptr && s->cancel->load(std::memory_order_relaxed)) {
      finish(*s, FinishReason::kCancelled);
    }
  }
  retire(running);
  if (running.empty()) return;

  // The batch: every decoding sequence's pending token, then work on one prompt chunk.
  batch_.clear();
  Sequence* prefill = nullptr;
  for (Sequence* s : running) {
    if (!s->prefilling()) {
      batch_.push_back(s);
    } else if (prefill == nullptr) {
      prefill = s;
    }
  }
  const int64_t decode_seqs = static_cast<int64_t>(batch_.size());
  // Drafts only while every decoding row still fits one pass over the weights.
  int64_t spare_rows = std::max<int64_t>(0, TextDecoder::kMaxDecodeRows - decode_seqs);
  row_of_.resize(static_cast<size_t>(decode_seqs + 1));
  int64_t decode_rows = 0;
  for (int64_t i = 0; i < decode_seqs; ++i) {
    Sequence& s = *batch_[i];
    propose_drafts(s, spare_rows);
    spare_rows -= static_cast<int64_t>(s.draft.size());
    row_of_[i] = decode_rows;
    decode_rows += 1 + static_cast<int64_t>(s.draft.size());
  }
  row_of_[decode_seqs] = decode_rows;
  // A step with prompt work counts as prefill (a benchmark runs one request at a time); its
  // phase ends with the forward, where the prompt's time is taken.
  std::optional<profile::StageScope> phase;
  phase.emplace(prefill != nullptr ? profile::Phase::kPrefill : profile::Phase::kDecode);
  x_.resize(static_cast<size_t>(decode_rows * hidden));
  positions_.resize(static_cast<size_t>(3 * decode_rows));
  entries_.clear();
  for (int64_t i = 0; i < decode_seqs; ++i) {
    Sequence& s = *batch_[i];
    const int64_t generated = static_cast<int64_t>(s.result.completion_ids.size());
    const int64_t p = s.prompt_length() + generated - 1 + s.positions.delta;
    const int64_t rows = 1 + static_cast<int64_t>(s.draft.size());
    int64_t* pos = positions_.data() + 3 * row_of_[i];  // [3, rows], stream-major
    for (int64_t stream = 0; stream < 3; ++stream) {
      for (int64_t j = 0; j < rows; ++j) pos[stream * rows + j] = p + j;
    }
    const uint64_t key = static_cast<uint64_t>(s.pending_token);
    s.kv->push_keys(&key, 1);
    for (int64_t t : s.draft) {
      const uint64_t k = static_cast<uint64_t>(t);
      s.kv->push_keys(&k, 1);
    }
    entries_.push_back({s.kv.get(), rows, pos, !s.draft.empty()});
  }
  if (prefill != nullptr && !prefill->chunk.active()) {
    // While others decode, smaller chunks: their layers are spread over steps (below).
    const int64_t size = decode_rows > 0 ? options_.prefill_chunk : options_.prefill_chunk_alone;
    const int64_t end = prefill_chunk_end(prefill->prompt_done, prefill->prompt_length(), size);
    prefill->chunk.start(prefill->prompt, prefill->positions, prefill->prompt_done, end, hidden);
  }
  bool prompt_completes = false;
  const int64_t layers = config_.text.num_layers;
  hidden_.resize(static_cast<size_t>((decode_rows + 1) * hidden));
  logits_.resize(static_cast<size_t>((decode_rows + 1) * vocab));
  const Timer step_time;
  int64_t prefill_layers_from = 0;
  try {
    std::lock_guard<TurnLock> turn(turn_);
    const Timer decode_time;
    if (decode_rows > 0) {
      // Embeddings of the decode tokens (inside the turn: the decoder is shared).
      for (int64_t i = 0; i < decode_seqs; ++i) {
        Sequence& s = *batch_[i];
        decoder_.embed(&s.pending_token, 1, x_.data() + row_of_[i] * hidden);
        if (!s.draft.empty()) {
          decoder_.embed(s.draft.data(), static_cast<int64_t>(s.draft.size()),
                         x_.data() + (row_of_[i] + 1) * hidden);
        }
      }
      decoder_.forward_batch(x_.data(), entries_, nullptr, hidden_.data());
      for (int64_t r0 = 0; r0 < decode_rows; r0 += TextDecoder::kMaxDecodeRows) {
        const int64_t r1 = std::min(decode_rows, r0 + TextDecoder::kMaxDecodeRows);
        decoder_.logits(hidden_.data() + r0 * hidden, r1 - r0, logits_.data() + r0 * vocab);
      }
    }
    decode_step_ms_.store(decode_rows > 0 ? decode_time.millis() : 0.0, std::memory_order_relaxed);
    if (prefill != nullptr) {
      // With decode rows, the chunk's layers take about prefill_share of the decode's time per
      // step (at least one layer), so the running streams keep their pace; alone, all of them.
      const double budget_ms = options_.prefill_share * decode_time.millis();
      PrefillChunk& c = prefill->chunk;
      const std::vector<BatchEntry> entry = {{prefill->kv.get(), c.rows(), c.positions.data()}};
      chunk_out_.resize(static_cast<size_t>(c.rows() * hidden));
      const Timer slice_time;
      double layer_ms = 0;
      prefill_layers_from = c.layers_done;
      while (c.layers_done < layers) {
        const int64_t to = decode_rows > 0 ? c.layers_done + 1 : layers;
        const double before = slice_time.millis();
        decoder_.forward_layers(c.hidden.data(), entry, c.features.or_null(), c.layers_done, to,
                                chunk_out_.data());
        c.layers_done = to;
        layer_ms = slice_time.millis() - before;
        if (slice_time.millis() + layer_ms > budget_ms) break;
      }
      if (c.layers_done == layers) {
        prompt_completes = c.end == prefill->prompt_length();
        if (prompt_completes) {
          decoder_.logits(chunk_out_.data() + (c.rows() - 1) * hidden, 1,
                          logits_.data() + decode_rows * vocab);
        }
      }
    }
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    batch_.resize(static_cast<size_t>(decode_seqs));
    if (prefill != nullptr) batch_.push_back(prefill);
    QVL_LOG(kError) << "a model step failed; ending its " << batch_.size() << " sequence(s)";
    for (Sequence* s : batch_) fail_sequence(*s, error);
    retire(running);
    return;
  }
  // A step that holds the model long stalls every running stream: say what it did.
  if (const double ms = step_time.millis(); ms > kSlowStepMs) {
    QVL_LOG(kDebug) << "slow step: " << static_cast<int>(ms) << " ms, " << decode_rows
                    << " decode rows"
                    << (prefill ? ", prompt layers " + std::to_string(prefill_layers_from) + ".." +
                                      std::to_string(prefill->chunk.layers_done) + " of rows " +
                                      std::to_string(prefill->chunk.begin) + ".." +
                                      std::to_string(prefill->chunk.end)
                                : std::string());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.steps;
    observe<kBatchSizeBuckets.size()>(stats_.batch_size_counts, stats_.batch_size_sum,
                                      kBatchSizeBuckets,
                                      static_cast<double>(decode_rows + (prefill ? 1 : 0)));
  }
  if (prefill != nullptr) {
    phase.reset();
    PrefillChunk& c = prefill->chunk;
    if (c.layers_done == layers) {
      prefill->prompt_done = c.end;
      c.clear();
    }
    if (prompt_completes) {
      prefill->result.stats.prompt_ms = prefill->prefill_timer.millis();
      prefill->decode_timer.reset();
      prefill->prompt = PromptEmbeddings();  // the embeddings live on in the KV cache only
      batch_.push_back(prefill);
    }
  }
  const double decode_ms = decode_step_ms_.load(std::memory_order_relaxed);
  for (int64_t i = 0; i < decode_seqs; ++i) {
    advance_rows(*batch_[i], logits_.data() + row_of_[i] * vocab, decode_ms);
  }
  if (static_cast<int64_t>(batch_.size()) > decode_seqs) {
    advance(*batch_[decode_seqs], logits_.data() + decode_rows * vocab);
  }
  retire(running);
}

void Scheduler::propose_drafts(Sequence& s, int64_t room) {
  s.draft.clear();
  const int64_t generated = static_cast<int64_t>(s.result.completion_ids.size());
  // The step may give 1 + drafts tokens: within max_new, and so within the KV pages reserved.
  room = std::min({room, options_.draft_tokens, s.max_new - generated - 1});
  if (s.draft_tokens >= 0) room = std::min(room, s.draft_tokens);
  if (room <= 0 || (!options_.prompt_lookup && !options_.jump_forward)) return;
  const int64_t cap = s.draft_policy.cap(room);
  if (cap <= 0) return;
  if (options_.jump_forward && s.constraint && s.think_end_id < 0) {
    s.constraint->forced_draft(s.tokenizer, cap, s.draft);
  }
  if (options_.prompt_lookup && s.draft.empty()) {
    const int64_t vocab = config_.text.vocab_size;
    const auto stop_at = [&](int64_t id) {
      return id < 0 || id >= vocab || s.tokenizer.is_added_token(static_cast<int32_t>(id));
    };
    prompt_lookup_draft(s.result.prompt_ids, s.result.completion_ids, SchedulerOptions::kMinNgram,
                        SchedulerOptions::kMaxNgram, cap, stop_at, s.draft);
  }
}

void Scheduler::advance_rows(Sequence& s, float* logits, double step_ms) {
  const int64_t vocab = config_.text.vocab_size;
  const int64_t drafted = static_cast<int64_t>(s.draft.size());
  int64_t accepted = 0;
  for (int64_t j = 0; j <= drafted; ++j) {
    // Row j's input (the pending token, or a draft the model has just agreed with) is right.
    if (drafted > 0) s.kv->commit(1);
    advance(s, logits + j * vocab);
    if (s.done || j == drafted || s.pending_token != s.draft[static_cast<size_t>(j)]) break;
    ++accepted;
  }
  s.draft_policy.record(drafted, accepted, step_ms);
  if (drafted > 0) {
    if (s.kv) s.kv->forget_uncommitted();
    s.result.stats.draft_tokens += drafted;
    s.result.stats.draft_accepted_tokens += accepted;
  }
}

void Scheduler::advance(Sequence& s, float* logits) {
  GenerationResult& r = s.result;
  try {
    int64_t token = 0;
    {
      const profile::StageScope stage(profile::Work::kSampler);
      const int64_t vocab = config_.text.vocab_size;
      const int64_t left = s.max_new - static_cast<int64_t>(r.completion_ids.size());
      if (s.constraint && s.think_end_id < 0 && is_greedy_sampling(s.sampler.params()) &&
          s.top_logprobs < 0) {
        // Greedy: when the model's own first choice is one the grammar allows, masking would
        // leave it first (masking only removes tokens), so the mask is needed only otherwise.
        // A trained model's choice mostly is allowed; the mask walks the whole vocabulary.
        token = s.sampler.sample(logits, vocab, r.prompt_ids, r.completion_ids);
        if (!s.constraint->allows(token, left)) {
          s.constraint->mask(logits, vocab, left);
          token = s.sampler.sample(logits, vocab, r.prompt_ids, r.completion_ids);
        }
      } else {
        if (s.constraint && s.think_end_id >= 0) {
          s.constraint->mask_reasoning(logits, vocab, left, s.think_end_id);
        } else if (s.constraint) {
          s.constraint->mask(logits, vocab, left);
        }
        token = s.sampler.sample(logits, vocab, r.prompt_ids, r.completion_ids);
      }
    }
    if (r.completion_ids.empty()) r.stats.ttft_ms = s.started.millis();
    if (!s.sampler.params().ignore_eos &&
        std::find(eos_.begin(), eos_.end(), token) != eos_.end()) {
      finish(s, FinishReason::kStop);
      return;
    }
    r.completion_ids.push_back(token);
    if (s.constraint && s.think_end_id < 0) {
      s.constraint->accept(token);
    } else if (token == s.think_end_id) {
      s.think_end_id = -1;  // the answer begins
    }
    const StopMatcher::Result m = s.stops.feed(s.detok.push(static_cast<int32_t>(token)));
    if (!m.text.empty()) {
      r.text += m.text;
      if (s.on_text && !s.on_text(m.text)) s.callback_stopped = true;
    }
    // Last of the token's callbacks: a streamer sends its text and log-probability together,
    // and a token without text (held-back bytes, an id with no text) still leaves at once.
    if (s.top_logprobs >= 0) s.record_logprobs(logits, config_.text.vocab_size, token);
    if (m.stopped || (s.constraint && s.think_end_id < 0 && s.constraint->finished())) {
      finish(s, FinishReason::kStop);
    } else if (s.callback_stopped ||
               (s.cancel != nullptr && s.cancel->load(std::memory_order_relaxed))) {
      finish(s, FinishReason::kCancelled);
    } else if (static_cast<int64_t>(r.completion_ids.size()) >= s.max_new) {
      finish(s, FinishReason::kLength);
    } else {
      s.pending_token = token;
    }
  } catch (...) {
    fail_sequence(s, std::current_exception());
  }
}

void Scheduler::finish(Sequence& s, FinishReason reason) {
  GenerationResult& r = s.result;
  r.finish = reason;
  if (reason != FinishReason::kCancelled) {
    std::string tail;
    const StopMatcher::Result m = s.stops.feed(s.detok.flush());
    tail = m.text;
    if (!m.stopped) tail += s.stops.flush();
    if (!tail.empty()) {
      r.text += tail;
      if (s.on_text) s.on_text(tail);
    }
  }
  r.stats.completion_tokens = static_cast<int64_t>(r.completion_ids.size());
  if (s.constraint) r.stats.constraint_ms = s.constraint->mask_ms();
  r.stats.decode_ms = s.decode_timer.millis();
  r.stats.total_ms = s.started.millis();
  if (s.kv) s.kv->release();
  s.done = true;
}

void Scheduler::fail_sequence(Sequence& s, std::exception_ptr error) {
  if (s.kv) s.kv->release();
  s.error = std::move(error);
  s.done = true;
}

void Scheduler::retire(std::vector<Sequence*>& running) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.kv = pool_.stats();
  bool any = false;
  for (Sequence* s : running) {
    if (s->done) {
      s->finished = true;
      any = true;
    }
  }
  running.erase(
      std::remove_if(running.begin(), running.end(), [](const Sequence* s) { return s->finished; }),
      running.end());
  stats_.running = static_cast<int64_t>(running.size());
  if (any) finished_.notify_all();
}

}  // namespace qvl
