#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "engine/image_features.h"
#include "engine/loaded_model.h"
#include "engine/prompt.h"
#include "engine/prompt_embeddings.h"
#include "engine/sampler.h"
#include "engine/scoring.h"
#include "engine/stop_matcher.h"
#include "engine/turn_lock.h"
#include "model/rope_index.h"
#include "tokenizer/incremental_decoder.h"

namespace qvl {
namespace {

// Interactive default budget: up to 1024 image tokens (about 1 megapixel, e.g. 1280x800) keeps
// a photo to seconds on a CPU while leaving receipts and screenshots legible; at least 64.
constexpr int64_t kDefaultImageMinTokens = 64;
constexpr int64_t kDefaultImageMaxTokens = 1024;

class EngineImpl : public Engine {
 public:
  explicit EngineImpl(const EngineOptions& options)
      : options_(options),
        model_(load_model_folder(options.model_dir, options.quant, options.vision_quant)),
        decoder_(model_->config.text, model_->text_weights),
        vision_(model_->config.vision, model_->vision_weights) {
    const int64_t min_tokens =
        options.image_min_tokens > 0 ? options.image_min_tokens : kDefaultImageMinTokens;
    const int64_t max_tokens = options.image_max_tokens > 0
                                   ? options.image_max_tokens
                                   : std::max(min_tokens, kDefaultImageMaxTokens);
    preprocess_ = with_token_budget(model_->preprocess, min_tokens, max_tokens);
    info_.name = model_->dir.substr(model_->dir.find_last_of('/') + 1);
    const int64_t model_ctx = model_->config.text.max_position_embeddings;
    info_.context_length =
        options.max_context > 0 ? std::min(options.max_context, model_ctx) : model_ctx;
    info_.vocab_size = model_->config.text.vocab_size;
    if (!model_->text_weights.layers.empty()) {
      info_.weights = ops::quant_type_name(model_->text_weights.layers[0].q_proj.type());
    }
    if (!model_->vision_weights.blocks.empty()) {
      info_.vision_weights =
          ops::quant_type_name(model_->vision_weights.blocks[0].qkv.weight.type());
    }
    info_.kv_cache = decoder_.kv_type() == KVType::kF16 ? "f16" : "f32";
    info_.image_min_tokens = min_tokens;
    info_.image_max_tokens = max_tokens;
    const GenerationConfig& g = model_->generation;
    info_.default_sampling.temperature = g.do_sample ? g.temperature : 0.0f;
    info_.default_sampling.top_p = g.top_p;
    info_.default_sampling.top_k = g.top_k;
    info_.default_sampling.repetition_penalty = g.repetition_penalty;
  }

  const ModelInfo& info() const override { return info_; }

  ImageEmbeddings embed_image(const ImageInput& image) override {
    GenerationRequest request;
    request.images.push_back(image);
    std::vector<ImageFeatures> features = encode_images(request, {0}, nullptr);
    ImageEmbeddings out;
    out.tokens = features[0].vision.tokens;
    out.width = model_->config.vision.out_hidden_size;
    out.values = std::move(features[0].vision.embeds);
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
  std::vector<ImageFeatures> encode_images(const GenerationRequest& request,
                                           const std::vector<int>& order,
                                           const std::atomic<bool>* cancel);

  EngineOptions options_;
  std::unique_ptr<LoadedModel> model_;
  TextDecoder decoder_;
  VisionEncoder vision_;
  PreprocessConfig preprocess_;
  ModelInfo info_;
  TurnLock turn_;
};

std::vector<ImageFeatures> EngineImpl::encode_images(const GenerationRequest& request,
                                                     const std::vector<int>& order,
                                                     const std::atomic<bool>* cancel) {
  DecodeLimits limits;
  limits.max_bytes = options_.max_image_bytes;
  limits.max_pixels = options_.max_image_pixels;
  std::vector<ImageFeatures> out;
  for (size_t k = 0; k < order.size(); ++k) {
    const int idx = order[k];
    if (idx < 0 || idx >= static_cast<int>(request.images.size())) {
      fail(ErrorCode::kInvalidArgument, "image part refers to image " + std::to_string(idx) +
                                            ", but the request has " +
                                            std::to_string(request.images.size()));
    }
    const ImageInput& in = request.images[idx];
    PreprocessConfig pre = preprocess_;
    if (in.min_tokens > 0 || in.max_tokens > 0) {
      const int64_t lo = in.min_tokens > 0 ? in.min_tokens : info_.image_min_tokens;
      const int64_t hi = in.max_tokens > 0 ? in.max_tokens : std::max(lo, info_.image_max_tokens);
      pre = with_token_budget(model_->preprocess, lo, hi);
    }
    std::lock_guard<TurnLock> turn(turn_);
    if (cancelled(cancel)) fail(ErrorCode::kCancelled, "request cancelled");
    try {
      out.push_back(encode_image_bytes(vision_, in.bytes.data(), in.bytes.size(), limits, pre));
    } catch (const Error& e) {
      fail(e.code(), "image " + std::to_string(idx + 1) + ": " + e.what());
    }
  }
  return out;
}

GenerationResult EngineImpl::generate(const GenerationRequest& request, const TextCallback& on_text,
                                      const std::atomic<bool>* cancel) {
  const Timer total;
  GenerationResult result;
  const SamplingParams& sp = request.sampling;
  validate_sampling(sp);
  if (sp.max_tokens <= 0) fail(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  if (request.messages.empty()) fail(ErrorCode::kInvalidArgument, "messages must not be empty");
  const ModelConfig& cfg = model_->config;
  const int64_t hidden = cfg.text.hidden_size;

  // Images first: they decide how many pad tokens the prompt has.
  const std::vector<int> order = image_order(request.messages);
  const Timer image_timer;
  const std::vector<ImageFeatures> images = encode_images(request, order, cancel);
  result.stats.image_ms = order.empty() ? 0.0 : image_timer.millis();
  std::vector<int64_t> image_tokens;
  std::vector<ImageGrid> grids;
  for (const auto& f : images) {
    image_tokens.push_back(f.vision.tokens);
    grids.push_back(f.grid);
    result.stats.image_tokens += f.vision.tokens;
  }

  const std::string prompt_text = render_prompt(request.messages);
  result.prompt_ids = prompt_token_ids(model_->tokenizer, cfg, prompt_text, image_tokens);
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
  const int64_t max_new = std::min<int64_t>(sp.max_tokens, info_.context_length - n);
  const RopePositions pos =
      compute_rope_positions(ids, grids, cfg.image_token_id, cfg.vision.spatial_merge_size);

  // Prompt embeddings with image features at the pad positions, DeepStack added per layer.
  PromptEmbeddings prompt = embed_prompt(decoder_, cfg, ids, images);
  std::vector<float>& x = prompt.x;

  KVCache cache = decoder_.new_cache();
  Sampler sampler(sp);
  StopMatcher stops(sp.stop);
  IncrementalDecoder detok(model_->tokenizer, /*skip_special_tokens=*/true);
  const auto& eos = model_->generation.eos_token_ids;
  std::vector<float> hidden_row(static_cast<size_t>(hidden));
  std::vector<float> logits(static_cast<size_t>(cfg.text.vocab_size));
  bool stopped = false;
  auto emit = [&](const std::string& text) {
    if (text.empty()) return;
    result.text += text;
    if (on_text && !on_text(text)) stopped = true;
  };

  const Timer prefill_timer;
  {
    std::lock_guard<TurnLock> turn(turn_);
    if (cancelled(cancel)) fail(ErrorCode::kCancelled, "request cancelled");
    std::vector<float> final_norm(static_cast<size_t>(n * hidden));
    decoder_.forward(x.data(), n, pos.pos.data(), cache, prompt.adds_or_null(), final_norm.data());
    std::copy(final_norm.end() - hidden, final_norm.end(), hidden_row.begin());
    decoder_.logits(hidden_row.data(), 1, logits.data());
  }
  result.stats.prompt_ms = prefill_timer.millis();
  const Timer decode_timer;
  result.finish = FinishReason::kLength;
  for (int64_t step = 0; step < max_new; ++step) {
    const int64_t token =
        sampler.sample(logits.data(), cfg.text.vocab_size, ids, result.completion_ids);
    if (step == 0) result.stats.ttft_ms = total.millis();
    if (!sp.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) {
      result.finish = FinishReason::kStop;
      break;
    }
    result.completion_ids.push_back(token);
    const StopMatcher::Result r = stops.feed(detok.push(static_cast<int32_t>(token)));
    emit(r.text);
    if (r.stopped) {
      result.finish = FinishReason::kStop;
      break;
    }
    if (stopped || cancelled(cancel)) {
      result.finish = FinishReason::kCancelled;
      break;
    }
    if (step + 1 == max_new) break;
    const int64_t p = n + step + pos.delta;
    const int64_t p3[3] = {p, p, p};
    std::lock_guard<TurnLock> turn(turn_);
    decoder_.embed(&token, 1, x.data());
    decoder_.forward(x.data(), 1, p3, cache, nullptr, hidden_row.data());
    decoder_.logits(hidden_row.data(), 1, logits.data());
  }
  if (result.finish != FinishReason::kCancelled) {
    const StopMatcher::Result r = stops.feed(detok.flush());
    emit(r.text);
    if (!r.stopped) emit(stops.flush());
  }
  result.stats.completion_tokens = static_cast<int64_t>(result.completion_ids.size());
  result.stats.decode_ms = decode_timer.millis();
  result.stats.total_ms = total.millis();
  return result;
}

ScoreResult EngineImpl::score(const GenerationRequest& request,
                              const std::vector<int64_t>& continuation,
                              const LogitsCallback& on_logits) {
  if (request.messages.empty()) fail(ErrorCode::kInvalidArgument, "messages must not be empty");
  const std::vector<ImageFeatures> images =
      encode_images(request, image_order(request.messages), nullptr);
  std::vector<int64_t> image_tokens;
  for (const auto& f : images) image_tokens.push_back(f.vision.tokens);
  const std::vector<int64_t> ids = prompt_token_ids(model_->tokenizer, model_->config,
                                                    render_prompt(request.messages), image_tokens);
  std::lock_guard<TurnLock> turn(turn_);
  return score_continuation(decoder_, model_->config, ids, images, continuation,
                            info_.context_length, on_logits);
}

}  // namespace

Engine::ImageEmbeddings Engine::embed_image(const ImageInput& /*image*/) {
  fail(ErrorCode::kUnsupported, "this engine does not expose image embeddings");
}

std::unique_ptr<Engine> Engine::load(const EngineOptions& options) {
  if (options.threads > 0) ThreadPool::set_global_threads(options.threads);
  return std::make_unique<EngineImpl>(options);
}

}  // namespace qvl
