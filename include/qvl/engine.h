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

struct PreprocessedVideo;  // image/video_preprocess.h: the sampled, resized frames of a video

// Speculative decoding (the answer stays the same bits; docs/speculative-decoding.md): up to
// draft_tokens guessed tokens per sequence and step (0: off), from the prompt (prompt lookup)
// and from a response format's forced text (jump-forward).
struct SpeculativeOptions {
  int64_t draft_tokens = 7;
  bool prompt_lookup = true;
  bool jump_forward = true;
};

struct EngineOptions {
  // Hugging Face folder (config.json, *.safetensors, tokenizer.json, ...) or a pre-packed file
  // written by `qvl quantize`.
  std::string model_dir;
  // With a GGUF language model (llama.cpp's format) as model_dir: its vision projector (mmproj
  // GGUF). Empty: the one projector beside it (or in the folder model_dir).
  std::string mmproj;
  int threads = 0;  // 0 = one per physical core
  // Weight types: "exact" (fp32 math on the stored bf16 weights; the parity oracle), "bf16",
  // "q8" or "q4" (decoder in that type, lm_head q8, vision bf16). Quantised at load from a
  // folder; a pre-packed file is used as stored. Empty: q8 for a folder, as stored for a file.
  std::string quant;
  // Type of the output head (lm_head) with bf16/q8/q4 weights: "bf16", "q8" or "q4". Empty: q8
  // for q8/q4 (bf16 for bf16), as stored for a pre-packed file.
  std::string lm_head;
  // Vision tower's big matrices (qkv, proj, fc1, fc2, merger fc): "bf16" or "q8" (8-bit, about
  // 0.4 GB less for the 2B model, slightly less accurate). Empty: bf16 for a folder, as stored
  // for a pre-packed file. Not with quant "exact".
  std::string vision_quant;
  // Image token budget (one token = 32x32 px). 0 = the engine's interactive defaults.
  int64_t image_min_tokens = 0;
  int64_t image_max_tokens = 0;
  uint64_t max_image_pixels = 50'000'000;  // decoded size limit (width * height)
  size_t max_image_bytes = 32u << 20;      // encoded size limit per image
  // Video (docs/video.md): frames sampled at video_fps (0: the model's, 2), at most
  // video_max_frames of them (0: 128), resized so that all of them together hold at most
  // video_max_pixels (0: 8388608, i.e. 4096 video tokens). Requests may lower the frames and
  // pixels, and ask for another rate up to video_max_fps (0: 8).
  double video_fps = 0;
  double video_max_fps = 0;
  int64_t video_max_frames = 0;
  int64_t video_max_pixels = 0;
  size_t max_video_bytes = size_t{256} << 20;  // encoded size limit per video file
  int64_t max_context = 0;                     // 0 = the model's max_position_embeddings
  // Serving engine (see DESIGN.md section 5). The KV cache of all requests comes from one pool of
  // this many MiB (0 = 2048; pages become resident as they are first used); unused pages keep
  // their content for prompts that start the same way. Vision outputs of recent images are kept
  // within image_cache_mb (0 = 256; a negative value turns the cache off).
  int64_t kv_cache_mb = 0;
  int64_t image_cache_mb = 0;
  int64_t kv_page_tokens = 128;  // positions per KV page (a multiple of 16)
  // false: a finished request's pages are freed at once and no prompt reuses earlier ones (every
  // prompt computed in full; resident KV stays at what running requests hold, and one request's
  // prompt cannot speed up, and so reveal itself to, another's).
  bool prefix_cache = true;
  // KV cache storage with bf16/q8/q4 weights: "f16" (default when empty) or "q8" (8-bit blocks
  // with a scale each: 0.56x the memory and bytes read per decode step). Exact keeps fp32.
  std::string kv_type;
  // Prompt positions per chunk while other requests decode (at least 16); the chunk's layers are
  // spread over their steps so they keep their pace. Alone, a prompt runs in larger chunks.
  int64_t prefill_chunk = 64;
  int64_t max_batch = 16;  // requests decoding together; more wait in order
  SpeculativeOptions speculative;
  // Free KV pages kept mapped in (and mapped in ahead) whenever the engine goes idle, so that
  // the next request (a chat's follow-up) does not fault fresh pages in: ~15-30 ms per 14 MiB
  // page of the 2B model in a VM. With any, pages are also mapped in whole when first used
  // (~2x cheaper than faults, but a request's last page is resident in full). A server wants a
  // few; a one-shot command none.
  int64_t idle_warm_kv_pages = 0;
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
  enum class Kind { kText, kImage, kVideo };
  Kind kind = Kind::kText;
  std::string text;
  int image_index = -1;
  int video_index = -1;  // kVideo: index into GenerationRequest::videos
};

// A function call the model made (parsed from its answer) or makes in the history.
struct ToolCall {
  std::string id;  // "call_..."
  std::string name;
  std::string arguments;  // JSON text
  // The history gave arguments as a JSON value rather than a string: the chat template shows
  // them through its tojson filter (Python's json.dumps spacing) instead of verbatim.
  bool arguments_are_value = false;
};

struct Message {
  Message() = default;
  // {role, content_is_string, parts}: the common case, without tool fields.
  Message(std::string role_, bool content_is_string_, std::vector<ContentPart> parts_)
      : role(std::move(role_)), content_is_string(content_is_string_), parts(std::move(parts_)) {}

  std::string role;  // system, user, assistant (tool is rendered as the template does)
  bool content_is_string = true;
  std::vector<ContentPart> parts;    // a string content is one text part
  std::vector<ToolCall> tool_calls;  // assistant messages of the history
  std::string tool_call_id;          // tool messages (the chat template does not show it)
  // Assistant messages of the history: that turn's reasoning. A Thinking model's template shows
  // it (after the last user query only); Instruct ignores it. Absent and "" differ there.
  std::optional<std::string> reasoning_content;
};

// A function the model may call (an OpenAI "tools" entry of type "function").
struct ToolDefinition {
  std::string name;
  std::string json;        // the whole tools entry as JSON text, shown to the model in the prompt
  std::string parameters;  // JSON Schema of the arguments as JSON text; empty = any object
};

// Constrained decoding: what every answer must be. The engine masks, at each step, the tokens
// that would leave the grammar, and allows the end of the answer only when it is complete.
struct OutputConstraint {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kToolCalls };
  Kind kind = Kind::kNone;
  std::string json_schema;  // kJsonSchema: the schema as JSON text (subset: README)
  // kToolCalls: one to max_tool_calls calls, in the model's <tool_call> format, of these tools
  // of GenerationRequest::tools (every tool when empty), with arguments matching their schemas.
  std::vector<std::string> tool_names;
  int max_tool_calls = 8;
};

struct ImageInput {
  std::vector<uint8_t> bytes;  // the encoded file (JPEG, PNG, WebP, GIF, BMP)
  int64_t min_tokens = 0;      // per-image budget override; 0 = engine default
  int64_t max_tokens = 0;
};

// A video: an encoded file, or frames the client already has, each an encoded image. Frames are
// sampled and resized as transformers' Qwen3-VL video processor does; each pair of frames gets a
// "<t seconds>" timestamp in the prompt.
struct VideoInput {
  std::vector<uint8_t> bytes;                // MP4/MOV, WebM, MKV, animated GIF or WebP
  std::vector<std::vector<uint8_t>> frames;  // or these frames in order (bytes empty)
  double frames_fps = 0;                     // the frames' rate; 0: already at the sampling fps
  // Per-request sampling (0: the engine's; fps up to its video_max_fps, the others up to its).
  double fps = 0;
  int64_t max_frames = 0;
  int64_t max_pixels = 0;  // over all sampled frames (2048 per video token)
};

// Log-probability of one token under the model's own distribution (log-softmax of the logits,
// before penalties, temperature and filters).
struct TokenLogprob {
  int64_t id = 0;
  double logprob = 0;  // -inf for a token the model rules out
  std::string bytes;   // the token's exact bytes (may be part of a UTF-8 character)
};

// One generated token's log-probability and the most likely alternatives at its position.
struct GeneratedTokenLogprobs {
  TokenLogprob token;
  std::vector<TokenLogprob> top;  // most likely first, ties by lower id
};

using LogprobsCallback = std::function<void(const GeneratedTokenLogprobs&)>;

struct GenerationRequest {
  std::vector<Message> messages;
  std::vector<ImageInput> images;
  std::vector<VideoInput> videos;  // referred to by kVideo parts
  SamplingParams sampling;
  std::vector<ToolDefinition> tools;  // rendered into the prompt as the chat template does
  OutputConstraint constraint;
  // -1: no log-probabilities (no cost). 0..kMaxTopLogprobs: each generated token's
  // log-probability plus that many alternatives, in GenerationResult::logprobs.
  int64_t top_logprobs = -1;
  // Speculative decoding for this request: -1 the engine's draft_tokens, 0 off, else at most
  // this many (and at most the engine's). The answer is the same either way; only speed differs.
  int64_t draft_tokens = -1;
  // Optional, with top_logprobs >= 0: called for each generated token (but an end-of-sequence
  // one) as its last callback, after its text (if any) went to the TextCallback: a streamer can
  // send each token when this comes, with or without text.
  LogprobsCallback on_logprobs;
};
constexpr int64_t kMaxTopLogprobs = 20;

// Throws qvl::Error(kInvalidArgument) when request.constraint cannot be enforced: a schema that
// is not JSON, an unsupported keyword (the message names it and where it is), a tool name that
// is not among request.tools. generate() checks the same; this lets a caller answer early.
void validate_output_constraint(const GenerationRequest& request);

enum class FinishReason { kStop, kLength, kCancelled };

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt positions reused from the prefix cache, not computed
  int64_t image_tokens = 0;
  int64_t video_tokens = 0;  // video pads (image_tokens counts pictures only)
  int64_t completion_tokens = 0;
  double image_ms = 0;   // decode + preprocess + vision tower (pictures and videos)
  double prompt_ms = 0;  // prefill of the text decoder
  double decode_ms = 0;  // token generation after the first token
  double ttft_ms = 0;    // from the call to the first generated token
  double total_ms = 0;
  double constraint_ms = 0;  // computing token masks for OutputConstraint (all steps)
  // Speculative decoding: draft tokens verified, and how many of them the model agreed with
  // (each one a step saved).
  int64_t draft_tokens = 0;
  int64_t draft_accepted_tokens = 0;
  // Thinking models: completion tokens up to and including "</think>" (all of them when it never
  // came). -1 for Instruct models.
  int64_t reasoning_tokens = -1;
};

struct GenerationResult {
  std::vector<int64_t> prompt_ids;
  std::vector<int64_t> completion_ids;
  std::string text;
  FinishReason finish = FinishReason::kStop;
  GenerationStats stats;
  std::vector<GeneratedTokenLogprobs> logprobs;  // one per completion id, if asked for
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

// The work of one forward pass, from the config and the weights in use: what `qvl bench` holds
// its speeds against the machine's ceilings with. Operations count a multiply-add as 2.
struct ModelCost {
  int64_t decode_weight_bytes = 0;    // weights one decode step reads: decoder matrices + lm_head
  int64_t lm_head_bytes = 0;          // of which the lm_head
  int64_t kv_bytes_per_position = 0;  // KV cache a decode step reads per token of context
  double text_ops_per_token = 0;      // decoder matrices (lm_head not included)
  double text_attention_ops_per_pair = 0;  // scores and values per (query, visible key), all layers
  double lm_head_ops_per_row = 0;
  double vision_ops_per_patch = 0;  // patch embedding, blocks and mergers (matrices), per patch
  double vision_attention_ops_per_pair = 0;  // per (query, key) patch pair of an image, all blocks
  int64_t patches_per_image_token = 0;
  std::string vision_weights;  // vision tower weight type: "exact", "bf16", ...
};

struct ModelInfo {
  std::string name;  // folder name, e.g. "Qwen3-VL-2B-Instruct"
  // "Instruct" or "Thinking", from the chat template the model ships. A Thinking model's answers
  // begin inside a <think> block: GenerationResult::text holds that reasoning, "</think>", then
  // the answer (the server and the CLI split them with server/reasoning_split.h).
  std::string variant = "Instruct";
  bool thinking = false;
  int64_t context_length = 0;
  int64_t vocab_size = 0;
  int64_t parameters = 0;  // the checkpoint's, from config.json
  // A mixture of experts: experts per sparse layer and how many a token runs (0 when dense), and
  // the parameters a token computes with (all of them when dense).
  int64_t experts = 0;
  int64_t experts_per_token = 0;
  int64_t active_parameters = 0;
  std::string size;  // as the family names it: "2B", "8B", ...
  // As stored (see LoadedModel): "safetensors", "gguf" or "qvl" (pre-packed), and the matrices'
  // type in that format's naming ("BF16", "Q4_K_M", "q4"); `weights` below is what runs.
  std::string file_format;
  std::string file_type;
  std::string vision_file_type;
  int64_t image_min_tokens = 0;
  int64_t image_max_tokens = 0;
  // Video settings in force (EngineOptions' after defaults).
  double video_fps = 0;
  double video_max_fps = 0;
  int64_t video_max_frames = 0;
  int64_t video_max_pixels = 0;
  SamplingParams default_sampling;  // from generation_config.json
  std::string weights;              // decoder weight type in use: "exact", "bf16", "q8" or "q4"
  std::string vision_weights;       // vision tower's big matrices: "exact", "bf16" or "q8"
  std::string kv_cache;             // KV cache storage: "f32" (exact), "f16" or "q8"
  // The weights as loaded: a pre-packed file's tensors, or a folder's checkpoint plus the
  // matrices packed from it at load (what resident memory holds beside caches and buffers).
  int64_t weight_bytes = 0;
  ModelCost cost;
};

// Counters of the serving engine's caches and scheduler (for /metrics and /props).
struct EngineStats {
  uint64_t prefix_hit_tokens = 0;     // prompt positions taken from the KV cache
  uint64_t prefix_lookup_tokens = 0;  // prompt positions looked up
  uint64_t image_cache_hits = 0;
  uint64_t image_cache_misses = 0;
  uint64_t image_cache_evictions = 0;
  uint64_t image_cache_entries = 0;
  uint64_t image_cache_bytes = 0;
  uint64_t image_cache_budget_bytes = 0;
  int64_t kv_pages_total = 0;
  int64_t kv_pages_used = 0;    // held by running requests
  int64_t kv_pages_cached = 0;  // idle, holding reusable prefixes
  int64_t kv_page_tokens = 0;
  uint64_t kv_page_bytes = 0;
  uint64_t kv_evictions = 0;
  uint64_t steps = 0;  // batched model steps
  int64_t running = 0;
  int64_t waiting = 0;
  // Histograms: counts[i] counts observations <= bounds[i]; the last count is the rest.
  std::vector<double> batch_size_bounds;
  std::vector<uint64_t> batch_size_counts;
  double batch_size_sum = 0;
  std::vector<double> queue_wait_bounds;  // seconds from submission to admission
  std::vector<uint64_t> queue_wait_counts;
  double queue_wait_sum = 0;
};

class Engine {
 public:
  // Loads everything (weights are mmapped). Throws qvl::Error with a clear message.
  static std::unique_ptr<Engine> load(const EngineOptions& options);
  virtual ~Engine() = default;

  virtual const ModelInfo& info() const = 0;

  // Thread-safe: concurrent calls are batched (continuous batching: one model step advances every
  // running request by a token, plus a chunk of a new prompt), and a prompt that starts like an
  // earlier one reuses its cached keys and values. Batch invariance: with temperature 0 or a
  // seed, the answer does not depend on what else runs. Throws qvl::Error for bad input (image,
  // prompt too long, bad parameters). `cancel` (optional) is polled between steps.
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

  virtual EngineStats stats() const = 0;
  // The vision tower's output for one image (what the image-pad positions receive), for quality
  // checks: [tokens, width] row-major. Thread-safe like generate; throws qvl::Error for a bad
  // image, or kUnsupported if the engine cannot expose it.
  struct ImageEmbeddings {
    int64_t tokens = 0, width = 0;
    std::vector<float> values;
  };
  virtual ImageEmbeddings embed_image(const ImageInput& image);
  // A request's video as generate() samples and resizes it before the vision tower (frames,
  // pair timestamps, grid, tokens), with no model work: what POST /v1/media/preview shows.
  // Throws qvl::Error as generate() would for the video, or kUnsupported.
  virtual PreprocessedVideo sample_video(const VideoInput& video) const;

  // Token ids of plain text (special-token text is matched as special tokens).
  virtual std::vector<int64_t> tokenize(const std::string& text) const = 0;
  virtual std::string detokenize(const std::vector<int64_t>& ids) const = 0;
};

}  // namespace qvl
