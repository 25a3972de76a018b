// qvl's public C++ API: load a Qwen3-VL model and generate answers to conversations with
// images. The server and the CLI use only this header.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qvl {

struct EngineOptions {
  // Hugging Face folder (config.json, *.safetensors, tokenizer.json, ...) or a pre-packed file
  // written by `qvl quantize`.
  std::string model_dir;
  int threads = 0;  // 0 = one per physical core
  // Weight types: "exact" (fp32 math on the stored bf16 weights; the parity oracle), "bf16",
  // "q8" or "q4" (decoder in that type, lm_head q8, vision bf16). Quantised at load from a
  // folder; a pre-packed file is used as stored. Empty: q8 for a folder, as stored for a file.
  std::string quant;
  // Vision tower's big matrices (qkv, proj, fc1, fc2, merger fc): "bf16" or "q8" (8-bit, about
  // 0.4 GB less for the 2B model, slightly less accurate). Empty: bf16 for a folder, as stored
  // for a pre-packed file. Not with quant "exact".
  std::string vision_quant;
  // Image token budget (one token = 32x32 px). 0 = the engine's interactive defaults.
  int64_t image_min_tokens = 0;
  int64_t image_max_tokens = 0;
  uint64_t max_image_pixels = 50'000'000;  // decoded size limit (width * height)
  size_t max_image_bytes = 32u << 20;      // encoded size limit per image
  int64_t max_context = 0;                 // 0 = the model's max_position_embeddings
};

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;
  int64_t top_k = 0;  // 0 = off
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::optional<uint64_t> seed;  // same seed, same output
  std::vector<std::string> stop;
  int64_t max_tokens = 512;
  bool ignore_eos = false;
};

// One part of a message's content; images refer to GenerationRequest::images by index.
struct ContentPart {
  enum class Kind { kText, kImage };
  Kind kind = Kind::kText;
  std::string text;
  int image_index = -1;
};

struct Message {
  std::string role;  // system, user, assistant (tool is rendered as the template does)
  bool content_is_string = true;
  std::vector<ContentPart> parts;  // a string content is one text part
};

struct ImageInput {
  std::vector<uint8_t> bytes;  // the encoded file (JPEG, PNG, WebP, GIF, BMP)
  int64_t min_tokens = 0;      // per-image budget override; 0 = engine default
  int64_t max_tokens = 0;
};

struct GenerationRequest {
  std::vector<Message> messages;
  std::vector<ImageInput> images;
  SamplingParams sampling;
};

enum class FinishReason { kStop, kLength, kCancelled };

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t image_tokens = 0;
  int64_t completion_tokens = 0;
  double image_ms = 0;   // decode + preprocess + vision tower
  double prompt_ms = 0;  // prefill of the text decoder
  double decode_ms = 0;  // token generation after the first token
  double ttft_ms = 0;    // from the call to the first generated token
  double total_ms = 0;
};

struct GenerationResult {
  std::vector<int64_t> prompt_ids;
  std::vector<int64_t> completion_ids;
  std::string text;
  FinishReason finish = FinishReason::kStop;
  GenerationStats stats;
};

// Receives text as it is generated, always in whole UTF-8 characters. Return false to cancel.
using TextCallback = std::function<bool(const std::string& delta)>;

// Next-token logits [vocab_size] at scored position `index` (see Engine::score). The pointer is
// valid only during the call.
using LogitsCallback = std::function<void(int64_t index, const float* logits)>;

struct ScoreResult {
  std::vector<int64_t> prompt_ids;
  int64_t image_tokens = 0;
  // log p(continuation[i] | prompt, continuation[0..i)) under the model, one per token.
  std::vector<double> token_logprobs;
};

struct ModelInfo {
  std::string name;  // folder name, e.g. "Qwen3-VL-2B-Instruct"
  int64_t context_length = 0;
  int64_t vocab_size = 0;
  int64_t image_min_tokens = 0;
  int64_t image_max_tokens = 0;
  SamplingParams default_sampling;  // from generation_config.json
  std::string weights;              // decoder weight type in use: "exact", "bf16", "q8" or "q4"
  std::string vision_weights;       // vision tower's big matrices: "exact", "bf16" or "q8"
  std::string kv_cache;             // KV cache storage: "f32" (exact) or "f16"
};

class Engine {
 public:
  // Loads everything (weights are mmapped). Throws qvl::Error with a clear message.
  static std::unique_ptr<Engine> load(const EngineOptions& options);
  virtual ~Engine() = default;

  virtual const ModelInfo& info() const = 0;

  // Thread-safe: concurrent calls take turns step by step (prefill chunk or one token), so
  // several requests make progress together. Throws qvl::Error for bad input (image, prompt
  // too long, bad parameters). `cancel` (optional) is polled between steps.
  virtual GenerationResult generate(const GenerationRequest& request,
                                    const TextCallback& on_text = {},
                                    const std::atomic<bool>* cancel = nullptr) = 0;

  // Teacher forcing: runs the prompt of `request` (messages and images; sampling is ignored)
  // followed by `continuation` in one forward pass, at the positions greedy decoding would give
  // those tokens. Calls on_logits (optional) continuation.size() + 1 times, in order: index 0 is
  // the distribution after the last prompt token (the one that predicts continuation[0]), index
  // i > 0 the one after continuation[i - 1]. Logits are produced a few rows at a time, so memory
  // does not grow with vocab * length. Thread-safe like generate; throws qvl::Error for bad input.
  virtual ScoreResult score(const GenerationRequest& request,
                            const std::vector<int64_t>& continuation,
                            const LogitsCallback& on_logits = {}) = 0;

  // The vision tower's output for one image (what the image-pad positions receive), for quality
  // checks: [tokens, width] row-major. Thread-safe like generate; throws qvl::Error for a bad
  // image, or kUnsupported if the engine cannot expose it.
  struct ImageEmbeddings {
    int64_t tokens = 0, width = 0;
    std::vector<float> values;
  };
  virtual ImageEmbeddings embed_image(const ImageInput& image);

  // Token ids of plain text (special-token text is matched as special tokens).
  virtual std::vector<int64_t> tokenize(const std::string& text) const = 0;
  virtual std::string detokenize(const std::vector<int64_t>& ids) const = 0;
};

}  // namespace qvl
