#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

#include "base/error.h"
#include "base/heap_trim.h"
#include "base/log.h"
#include "base/stage_profile.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "engine/image_cache.h"
#include "engine/image_features.h"
#include "engine/kv_pool.h"
#include "engine/loaded_model.h"
#include "engine/model_cost.h"
#include "engine/output_constraint.h"
#include "engine/prompt.h"
#include "engine/prompt_embeddings.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "engine/scoring.h"
#include "engine/sequence.h"
#include "engine/stop_matcher.h"
#include "engine/turn_lock.h"
#include "engine/video_features.h"
#include "engine/visual_prompt.h"
#include "model/model_size.h"
#include "model/rope_index.h"
#include "ops/attention.h"
#include "ops/int8_gemm.h"
#include "tokenizer/incremental_decoder.h"

namespace qvl {
namespace {

// Interactive default budget: up to 1024 image tokens (about 1 megapixel, e.g. 1280x800) keeps
// a photo to seconds on a CPU while leaving receipts and screenshots legible; at least 64.
constexpr int64_t kDefaultImageMinTokens = 64;
constexpr int64_t kDefaultImageMaxTokens = 1024;
constexpr int64_t kDefaultKvCacheMb = 2048;
constexpr int64_t kDefaultImageCacheMb = 256;
// Video: up to 128 frames (64 s at 2 fps) within 4096 video tokens (2048 pixels each).
constexpr int64_t kDefaultVideoMaxFrames = 128;
constexpr int64_t kDefaultVideoMaxPixels = int64_t{4096} * 2048;
constexpr double kDefaultVideoMaxFps = 8;

VideoSettings video_settings(const EngineOptions& o, const std::string& model_dir,
                             const PreprocessConfig& image_config) {
  VideoSettings v;
  v.config = video_preprocess_config_for(model_dir, image_config);
  if (o.video_fps > 0) v.config.sampling.fps = o.video_fps;
  v.max_fps =
      o.video_max_fps > 0 ? o.video_max_fps : std::max(kDefaultVideoMaxFps, v.config.sampling.fps);
  v.config.sampling.max_frames =
      o.video_max_frames > 0 ? o.video_max_frames : kDefaultVideoMaxFrames;
  v.config.sampling.min_frames =
      std::min(v.config.sampling.min_frames, v.config.sampling.max_frames);
  v.config.max_pixels = o.video_max_pixels > 0 ? o.video_max_pixels : kDefaultVideoMaxPixels;
  v.config.min_pixels = std::min(v.config.min_pixels, v.config.max_pixels);
  validate_video_preprocess_config(v.config);
  if (!(v.max_fps >= v.config.sampling.fps)) {
    fail(ErrorCode::kInvalidArgument, "video_max_fps must be at least video_fps");
  }
  v.max_bytes = o.max_video_bytes;
  v.frame_limits.max_bytes = o.max_image_bytes;
  v.frame_limits.max_pixels = o.max_image_pixels;
  return v;
}

// The decoder's KV storage as the options ask (empty: its default), for the pool built next.
KVType configured_kv_type(TextDecoder& decoder, const std::string& kv_type) {
  if (!kv_type.empty()) decoder.use_kv_type(parse_kv_type(kv_type));
  return decoder.kv_type();
}

size_t mib(int64_t value, int64_t fallback) {
  return static_cast<size_t>(value == 0 ? fallback : std::max<int64_t>(value, 0)) << 20;
}

SchedulerOptions scheduler_options(const EngineOptions& o) {
  if (o.prefill_chunk < kMinPrefillChunk || o.max_batch <= 0) {
    fail(ErrorCode::kInvalidArgument, "prefill_chunk must be at least " +
                                          std::to_string(kMinPrefillChunk) +
                                          " and max_batch positive");
  }
  SchedulerOptions s;
  s.prefill_chunk = o.prefill_chunk;
  s.prefill_chunk_alone = std::max(o.prefill_chunk, s.prefill_chunk_alone);
  s.max_running = o.max_batch;
  const SpeculativeOptions& spec = o.speculative;
  if (spec.draft_tokens < 0) fail(ErrorCode::kInvalidArgument, "draft_tokens must be 0 or more");
  s.draft_tokens = std::min(spec.draft_tokens, TextDecoder::kMaxDecodeRows - 1);
  s.prompt_lookup = spec.prompt_lookup;
  s.jump_forward = spec.jump_forward;
  s.idle_warm_kv_pages = std::max<int64_t>(0, o.idle_warm_kv_pages);
  return s;
}

// An image's identity within prompt cache keys: its digest and the budget it was resized to.
uint64_t image_identity(const ImageKey& key) {
  return digest_prefix(key.digest) ^
         (static_cast<uint64_t>(key.max_pixels) * 0x9e3779b97f4a7c15ull) ^
         static_cast<uint64_t>(key.min_pixels);
}

struct EncodedImages {
  std::vector<SharedImageFeatures> features;
  std::vector<uint64_t> identities;
};

class EngineImpl : public Engine {
 public:
  explicit EngineImpl(const EngineOptions& options)
      : options_(options),
        model_(load_model_folder(options.model_dir, options.quant, options.lm_head,
                                 options.vision_quant, options.mmproj)),
        decoder_(model_->config.text, model_->text_weights),
        vision_(model_->config.vision, model_->vision_weights),
        image_cache_(
            options.image_cache_mb < 0 ? 0 : mib(options.image_cache_mb, kDefaultImageCacheMb)),
        pool_(model_->config.text.num_layers, model_->config.text.num_kv_heads,
              model_->config.text.head_dim, configured_kv_type(decoder_, options.kv_type),
              options.kv_page_tokens, mib(options.kv_cache_mb, kDefaultKvCacheMb),
              options.prefix_cache),
        scheduler_(decoder_, model_->config, model_->generation.eos_token_ids, pool_, turn_,
                   scheduler_options(options)) {
    return_large_buffers_when_freed();  // images' and prompts' buffers leave memory when freed
    const int64_t min_tokens =
        options.image_min_tokens > 0 ? options.image_min_tokens : kDefaultImageMinTokens;
    const int64_t max_tokens = options.image_max_tokens > 0
                                   ? options.image_max_tokens
                                   : std::max(min_tokens, kDefaultImageMaxTokens);
    preprocess_ = with_token_budget(model_->preprocess, min_tokens, max_tokens);
    video_ = video_settings(options, model_->dir, model_->preprocess);
    info_.video_fps = video_.config.sampling.fps;
    info_.video_max_fps = video_.max_fps;
    info_.video_max_frames = video_.config.sampling.max_frames;
    info_.video_max_pixels = video_.config.max_pixels;
    info_.name = model_->dir.substr(model_->dir.find_last_of('/') + 1);
    info_.thinking = model_->chat_variant == ChatTemplateVariant::kThinking;
    info_.variant = chat_template_variant_name(model_->chat_variant);
    const int64_t model_ctx = model_->config.text.max_position_embeddings;
    info_.context_length =
        options.max_context > 0 ? std::min(options.max_context, model_ctx) : model_ctx;
    info_.vocab_size = model_->config.text.vocab_size;
    const ModelParameters parameters = model_parameters(model_->config);
    info_.parameters = parameters.total();
    info_.active_parameters = parameters.text_active + parameters.vision;
    info_.experts = model_->config.text.num_experts;
    info_.experts_per_token = model_->config.text.num_experts_per_tok;
    info_.size = model_size_label(model_->config);
    info_.file_format = model_->file_format;
    info_.file_type = model_->file_type;
    info_.vision_file_type = model_->vision_file_type;
    if (!model_->text_weights.layers.empty()) {
      info_.weights = ops::quant_values_name(model_->text_weights.layers[0].q_proj.type());
    }
    if (!model_->vision_weights.blocks.empty()) {
      info_.vision_weights =
          ops::quant_values_name(model_->vision_weights.blocks[0].qkv.weight.type());
    }
    info_.kv_cache = kv_type_name(decoder_.kv_type());
    info_.weight_bytes = loaded_weight_bytes(*model_);
    info_.cost = model_cost(model_->config, model_->text_weights, model_->vision_weights,
                            decoder_.kv_type());
    info_.image_min_tokens = min_tokens;
    info_.image_max_tokens = max_tokens;
    const GenerationConfig& g = model_->generation;
    info_.default_sampling.temperature = g.do_sample ? g.temperature : 0.0f;
    info_.default_sampling.top_p = g.top_p;
    info_.default_sampling.top_k = g.top_k;
    info_.default_sampling.repetition_penalty = g.repetition_penalty;
  }

  const ModelInfo& info() const override { return info_; }

  PreprocessedVideo sample_video(const VideoInput& video) const override {
    if (model_->config.video_token_id < 0) {
      fail(ErrorCode::kUnsupported, "this model's config has no video_token_id");
    }
    return qvl::prepare_video(video, video_request_config(video_, video), video_);
  }

  ImageEmbeddings embed_image(const ImageInput& image) override {
    GenerationRequest request;
    request.images.push_back(image);
    const EncodedImages encoded = encode_images(request, {{false, 0}}, nullptr);
    ImageEmbeddings out;
    out.tokens = encoded.features[0]->vision.tokens;
    out.width = model_->config.vision.out_hidden_size;
    out.values = encoded.features[0]->vision.embeds;  // cached features are shared: a copy
    return out;
  }

  std::vector<int64_t> tokenize(const std::string& text) const override {
    const auto ids = model_->tokenizer.encode(text);
    return {ids.begin(), ids.end()};
  }

  std::string detokenize(const std::vector<int64_t>& ids) const override {
    std::vector<int32_t> narrow;
    for (int64_t id : ids) narrow.push_back(static_cast<int32_t>(id));
    return model_->tokenizer.decode(narrow);
  }

  GenerationResult generate(const GenerationRequest& request, const TextCallback& on_text,
                            const std::atomic<bool>* cancel) override;
  ScoreResult score(const GenerationRequest& request, const std::vector<int64_t>& continuation,
                    const LogitsCallback& on_logits) override;

 private:
  bool cancelled(const std::atomic<bool>* cancel) const {
    return cancel != nullptr && cancel->load(std::memory_order_relaxed);
  }
  // Pictures and videos in prompt order (a video's features hold all its frame pairs).
  EncodedImages encode_images(const GenerationRequest& request, const std::vector<VisualRef>& order,
                              const std::atomic<bool>* cancel);
  EngineStats stats() const override;
  // The id of "</think>" (-1 if the tokenizer has no such single token): where a Thinking
  // model's reasoning ends and a constrained answer begins.
  int64_t think_end_id() const {
    const std::vector<int32_t> ids = model_->tokenizer.encode("</think>");
    return ids.size() == 1 ? ids[0] : -1;
  }
  std::shared_ptr<const ConstraintVocabulary> constraint_vocabulary() {
    std::call_once(vocabulary_once_, [&] {
      vocabulary_ = std::make_shared<const ConstraintVocabulary>(model_->tokenizer,
                                                                 model_->config.text.vocab_size);
    });
    return vocabulary_;
  }

  EngineOptions options_;
  std::unique_ptr<LoadedModel> model_;
  TextDecoder decoder_;
  VisionEncoder vision_;
  PreprocessConfig preprocess_;
  VideoSettings video_;
  ModelInfo info_;
  TurnLock turn_;  // the decoder and vision tower run one step at a time
  ImageFeatureCache image_cache_;
  KVPool pool_;
  std::once_flag vocabulary_once_;
  std::shared_ptr<const ConstraintVocabulary>
      vocabulary_;       // built on the first constrained request
  Scheduler scheduler_;  // last: its thread stops before the rest goes
};

EncodedImages EngineImpl::encode_images(const GenerationRequest& request,
                                        const std::vector<VisualRef>& order,
                                        const std::atomic<bool>* cancel) {
  DecodeLimits limits;
  limits.max_bytes = options_.max_image_bytes;
  limits.max_pixels = options_.max_image_pixels;
  EncodedImages out;
  for (size_t k = 0; k < order.size(); ++k) {
    const int idx = order[k].index;
    const bool video = order[k].video;
    const std::string kind = video ? "video" : "image";
    const size_t available = video ? request.videos.size() : request.images.size();
    if (idx < 0 || idx >= static_cast<int>(available)) {
      fail(ErrorCode::kInvalidArgument, kind + " part refers to " + kind + " " +
                                            std::to_string(idx) + ", but the request has " +
                                            std::to_string(available));
    }
    try {
      PreprocessConfig pre = preprocess_;
      VideoPreprocessConfig video_pre;
      ImageKey key;
      if (video) {
        if (model_->config.video_token_id < 0) {
          fail(ErrorCode::kUnsupported, "this model's config has no video_token_id");
        }
        video_pre = video_request_config(video_, request.videos[idx]);
        key = video_key(request.videos[idx], video_pre);
      } else {
        const ImageInput& in = request.images[idx];
        if (in.min_tokens > 0 || in.max_tokens > 0) {
          const int64_t lo = in.min_tokens > 0 ? in.min_tokens : info_.image_min_tokens;
          const int64_t hi =
              in.max_tokens > 0 ? in.max_tokens : std::max(lo, info_.image_max_tokens);
          pre = with_token_budget(model_->preprocess, lo, hi);
        }
        key = image_key(in.bytes.data(), in.bytes.size(), pre);
      }
      out.identities.push_back(image_identity(key));
      if (SharedImageFeatures cached = image_cache_.find(key)) {
        out.features.push_back(std::move(cached));
        continue;
      }
      const profile::StageScope stage(profile::Phase::kVision);
      // Decoding and resizing need no model: they run beside the scheduler's steps.
      PreprocessedImage prepared;
      PreprocessedVideo prepared_video;
      if (video) {
        prepared_video = prepare_video(request.videos[idx], video_pre, video_);
      } else {
        const ImageInput& in = request.images[idx];
        prepared = prepare_image_bytes(in.bytes.data(), in.bytes.size(), limits, pre);
      }
      std::unique_lock<TurnLock> turn(turn_);
      if (cancelled(cancel)) fail(ErrorCode::kCancelled, "request cancelled");
      // Within blocks of the tower, running requests get a decode step (the turn is fair) before
      // the tower's next piece would hold the model longer than their last step took.
      Timer held;
      double piece_start_ms = 0;
      const std::function<void()> between = [&] {
        const double now = held.millis(), piece = now - piece_start_ms;
        piece_start_ms = now;
        if (piece > 1000) {
          QVL_LOG(kDebug) << "slow vision piece: " << piece << " ms";
        }
        if (now + piece <= scheduler_.decode_step_ms()) return;
        turn.unlock();
        turn.lock();
        held.reset();
        piece_start_ms = 0;
        if (cancelled(cancel)) fail(ErrorCode::kCancelled, "request cancelled");
      };
      auto features = std::make_shared<const ImageFeatures>(
          video ? encode_prepared_video(vision_, prepared_video, video_pre, between)
                : encode_prepared_image(vision_, std::move(prepared), between));
      if (held.millis() - piece_start_ms > 1000) {
        QVL_LOG(kDebug) << "slow vision tail: " << held.millis() - piece_start_ms << " ms";
      }
      turn.unlock();
      ops::release_int8_gemm_scratch();  // this thread's copy of an image-sized x
      ops::release_attention_scratch();  // and its image-sized K/V panels
      return_free_heap_to_os();  // the tower's activations (tens of MB per image) were just freed
      image_cache_.insert(key, features);
      out.features.push_back(std::move(features));
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kCancelled) throw;
      fail(e.code(), kind + " " + std::to_string(idx + 1) + ": " + e.what());
    }
  }
  return out;
}

GenerationResult EngineImpl::generate(const GenerationRequest& request, const TextCallback& on_text,
                                      const std::atomic<bool>* cancel) {
  const SamplingParams& sp = request.sampling;
  validate_sampling(sp);
  if (request.top_logprobs < -1 || request.top_logprobs > kMaxTopLogprobs) {
    fail(ErrorCode::kInvalidArgument,
         "top_logprobs must be between 0 and " + std::to_string(kMaxTopLogprobs) + " (-1: off)");
  }
  if (sp.max_tokens <= 0) fail(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  if (request.draft_tokens < -1) {
    fail(ErrorCode::kInvalidArgument, "draft_tokens must be 0 or more (-1: the engine's)");
  }
  if (request.messages.empty()) fail(ErrorCode::kInvalidArgument, "messages must not be empty");
  const ModelConfig& cfg = model_->config;
  Sequence seq(model_->tokenizer, sp);
  GenerationResult& result = seq.result;

  // Pictures and videos first: they decide how many pad tokens the prompt has.
  const std::vector<VisualRef> order = visual_order(request.messages);
  const Timer image_timer;
  const EncodedImages images = encode_images(request, order, cancel);
  result.stats.image_ms = order.empty() ? 0.0 : image_timer.millis();

  if (auto grammar = compile_output_constraint(request)) {
    seq.constraint = std::make_unique<TokenConstraint>(std::move(grammar), constraint_vocabulary(),
                                                       model_->generation.eos_token_ids);
    if (info_.thinking) seq.think_end_id = think_end_id();
  }
  const std::string prompt_text =
      render_prompt(request.messages, request.tools, model_->chat_variant);
  VisualPrompt visual =
      build_visual_prompt(model_->tokenizer, cfg, prompt_text, order, images.features);
  result.stats.image_tokens = visual.image_tokens;
  result.stats.video_tokens = visual.video_tokens;
  result.prompt_ids = std::move(visual.ids);
  const auto& ids = result.prompt_ids;
  const int64_t n = static_cast<int64_t>(ids.size());
  result.stats.prompt_tokens = n;
  if (n >= info_.context_length) {
    fail(ErrorCode::kInvalidArgument, "the prompt has " + std::to_string(n) +
                                          " tokens but the context holds " +
                                          std::to_string(info_.context_length) +
                                          "; shorten the conversation or use fewer "
                                          "or smaller images");
  }
  seq.max_new = std::min<int64_t>(sp.max_tokens, info_.context_length - n);
  seq.positions = compute_rope_positions(ids, visual.grids, cfg.image_token_id,
                                         cfg.vision.spatial_merge_size, cfg.video_token_id);
  // Prompt embeddings with image features at the pad positions, DeepStack added per layer.
  seq.prompt = PromptEmbeddings(decoder_, cfg, ids, images.features);
  // Cache keys: image and video pads name their picture or video and row.
  seq.keys.resize(static_cast<size_t>(n));
  size_t image = 0;
  int64_t row = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] != cfg.image_token_id && ids[i] != cfg.video_token_id) {
      seq.keys[i] = static_cast<uint64_t>(ids[i]);
      continue;
    }
    while (row >= images.features[image]->vision.tokens) {
      ++image;
      row = 0;
    }
    seq.keys[i] = image_pad_key(images.identities[image], row++);
  }
  seq.on_text = on_text;
  seq.top_logprobs = request.top_logprobs;
  seq.draft_tokens = request.draft_tokens;
  seq.on_logprobs = request.on_logprobs;
  seq.cancel = cancel;
  scheduler_.run(seq);
  if (info_.thinking) {
    const std::vector<int64_t>& generated = seq.result.completion_ids;
    auto end = std::find(generated.begin(), generated.end(), think_end_id());
    if (end != generated.end()) ++end;
    seq.result.stats.reasoning_tokens = end - generated.begin();
  }
  return std::move(seq.result);
}

EngineStats EngineImpl::stats() const {
  EngineStats e;
  const SchedulerStats s = scheduler_.stats();
  e.prefix_hit_tokens = s.kv.prefix_hit_tokens;
  e.prefix_lookup_tokens = s.kv.prefix_lookup_tokens;
  e.kv_pages_total = s.kv.pages_total;
  e.kv_pages_used = s.kv.pages_used;
  e.kv_pages_cached = s.kv.pages_cached;
  e.kv_page_tokens = s.kv.page_rows;
  e.kv_page_bytes = s.kv.page_bytes;
  e.kv_evictions = s.kv.evictions;
  e.steps = s.steps;
  e.running = s.running;
  e.waiting = s.waiting;
  e.batch_size_bounds.assign(kBatchSizeBuckets.begin(), kBatchSizeBuckets.end());
  e.batch_size_counts.assign(s.batch_size_counts.begin(), s.batch_size_counts.end());
  e.batch_size_sum = s.batch_size_sum;
  e.queue_wait_bounds.assign(kQueueWaitBuckets.begin(), kQueueWaitBuckets.end());
  e.queue_wait_counts.assign(s.queue_wait_counts.begin(), s.queue_wait_counts.end());
  e.queue_wait_sum = s.queue_wait_sum;
  const ImageCacheStats c = image_cache_.stats();
  e.image_cache_hits = c.hits;
  e.image_cache_misses = c.misses;
  e.image_cache_evictions = c.evictions;
  e.image_cache_entries = c.entries;
  e.image_cache_bytes = c.bytes;
  e.image_cache_budget_bytes = c.budget_bytes;
  return e;
}

ScoreResult EngineImpl::score(const GenerationRequest& request,
                              const std::vector<int64_t>& continuation,
                              const LogitsCallback& on_logits) {
  if (request.messages.empty()) fail(ErrorCode::kInvalidArgument, "messages must not be empty");
  if (!request.videos.empty()) {
    fail(ErrorCode::kUnsupported, "scoring does not take videos yet");
  }
  std::vector<VisualRef> order;
  for (int idx : image_order(request.messages)) order.push_back({false, idx});
  const std::vector<SharedImageFeatures> images = encode_images(request, order, nullptr).features;
  std::vector<int64_t> image_tokens;
  for (const auto& f : images) image_tokens.push_back(f->vision.tokens);
  const std::vector<int64_t> ids = prompt_token_ids(
      model_->tokenizer, model_->config,
      render_prompt(request.messages, request.tools, model_->chat_variant), image_tokens);
  std::lock_guard<TurnLock> turn(turn_);
  return score_continuation(decoder_, model_->config, ids, images, continuation,
                            info_.context_length, on_logits);
}

}  // namespace

Engine::ImageEmbeddings Engine::embed_image(const ImageInput& /*image*/) {
  fail(ErrorCode::kUnsupported, "this engine does not expose image embeddings");
}

PreprocessedVideo Engine::sample_video(const VideoInput& /*video*/) const {
  fail(ErrorCode::kUnsupported, "this engine does not prepare videos");
}

std::unique_ptr<Engine> Engine::load(const EngineOptions& options) {
  if (options.threads < 0 || options.threads > ThreadPool::kMaxThreads) {
    fail(ErrorCode::kInvalidArgument, "threads must be between 0 (one per core) and " +
                                          std::to_string(ThreadPool::kMaxThreads) + ", not " +
                                          std::to_string(options.threads));
  }
  if (options.threads > 0) ThreadPool::set_global_threads(options.threads);
  return std::make_unique<EngineImpl>(options);
}

}  // namespace qvl
