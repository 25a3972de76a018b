#include "cli/run_command.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "cli/answer_printer.h"
#include "cli/conversation.h"
#include "cli/document_files.h"
#include "cli/draft_flags.h"
#include "cli/sampling_flags.h"
#include "cli/video_files.h"
#include "hub/model_pull.h"
#include "qvl/engine.h"
#include "server/logprobs_format.h"
#include "server/reasoning_split.h"

namespace qvl::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string mmproj;  // GGUF models: the vision projector (empty: the one beside the model)
  std::string prompt;
  std::string system;
  std::string messages_file;
  std::vector<std::string> images;
  std::vector<std::string> videos;
  std::vector<std::string> files;  // documents: PDF, multi-page TIFF (cli/document_files.h)
  DocumentFileOptions documents;
  VideoFlags video;
  int threads = 0;
  std::string quant;         // empty: q8 for a folder, as stored for a pre-packed file
  std::string lm_head;       // empty: the default for quant
  std::string vision_quant;  // empty: bf16 for a folder, as stored for a pre-packed file
  std::string kv_type;       // empty: f16
  int64_t image_min_tokens = 0;
  int64_t image_max_tokens = 0;
  bool json = false;
  int64_t logprobs = -1;  // with --json: alternatives per token (0..20); -1 = none
  bool offline = false;
  std::string json_schema_file;  // constrained decoding: answers match this JSON Schema
  bool json_object = false;      // constrained decoding: answers are a JSON object
  bool show_reasoning = false;   // Thinking models: print the reasoning (dimmed on a terminal)
  SamplingFlags sampling;
  SpeculativeOptions speculative;
};

const char* finish_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

void run(const RunOptions& o) {
  if (o.messages_file.empty() && o.prompt.empty()) {
    fail(ErrorCode::kInvalidArgument, "give a prompt, or --messages FILE");
  }
  if (!o.messages_file.empty() &&
      (!o.prompt.empty() || !o.images.empty() || !o.videos.empty() || !o.files.empty())) {
    fail(ErrorCode::kInvalidArgument,
         "--messages cannot be combined with a prompt, --image, --video or --file");
  }
  if (!o.json_schema_file.empty() && o.json_object) {
    fail(ErrorCode::kInvalidArgument, "give --json-schema or --json-object, not both");
  }
  if (o.logprobs >= 0 && !o.json) fail(ErrorCode::kInvalidArgument, "--logprobs needs --json");
  EngineOptions eo;
  hub::ResolveOptions resolve;
  resolve.offline = o.offline;
  eo.mmproj = o.mmproj;
  eo.model_dir = hub::resolve_model(o.model, resolve, eo.mmproj.empty() ? &eo.mmproj : nullptr);
  eo.threads = o.threads;
  eo.quant = o.quant;
  eo.lm_head = o.lm_head;
  eo.vision_quant = o.vision_quant;
  eo.kv_type = o.kv_type;
  eo.speculative = o.speculative;
  eo.image_min_tokens = o.image_min_tokens;
  eo.image_max_tokens = o.image_max_tokens;
  o.video.apply(eo);
  GenerationRequest req =
      o.messages_file.empty()
          ? request_from_question(o.prompt, o.images, o.system, eo.max_image_bytes)
          : request_from_messages_file(o.messages_file, eo.max_image_bytes, eo.max_video_bytes);
  add_video_files(req, o.videos, eo.max_video_bytes);
  add_document_files(req, o.files, o.documents);
  // Loaded after the inputs are read, so that a bad file fails at once.
  auto engine = Engine::load(eo);
  req.sampling = o.sampling.resolve(engine->info().default_sampling);
  if (!o.json_schema_file.empty()) {
    req.constraint.kind = OutputConstraint::Kind::kJsonSchema;
    req.constraint.json_schema = read_text_file(o.json_schema_file);
  } else if (o.json_object) {
    req.constraint.kind = OutputConstraint::Kind::kJsonObject;
  }
  req.top_logprobs = o.logprobs;

  const bool thinking = engine->info().thinking;
  TextCallback stream;
  AnswerPrinter printer(thinking, o.show_reasoning, stdout);
  if (!o.json) {
    // Nobody can read the answer (a full disk, a closed pipe): stop generating it.
    stream = [&printer](const std::string& delta) { return printer.feed(delta); };
  }
  const GenerationResult r = engine->generate(req, stream);
  if (!o.json) {
    printer.finish();
    std::fputc('\n', stdout);
    const double tps =
        r.stats.decode_ms > 0 ? 1000.0 * r.stats.completion_tokens / r.stats.decode_ms : 0;
    std::fprintf(
        stderr,
        "[%lld prompt tokens (%lld image, %lld video), %lld generated, TTFT %.0f ms, %.1f tok/s]\n",
        static_cast<long long>(r.stats.prompt_tokens), static_cast<long long>(r.stats.image_tokens),
        static_cast<long long>(r.stats.video_tokens),
        static_cast<long long>(r.stats.completion_tokens), r.stats.ttft_ms, tps);
    return;
  }
  nlohmann::json j;
  j["prompt_ids"] = r.prompt_ids;
  j["completion_ids"] = r.completion_ids;
  if (thinking) {
    // text is the answer, as for Instruct models; the reasoning before it is apart.
    server::SplitAnswer split = server::split_reasoning(r.text);
    j["text"] = split.content.value_or("");
    j["reasoning"] = std::move(split.reasoning);
  } else {
    j["text"] = r.text;
  }
  j["finish_reason"] = finish_name(r.finish);
  j["usage"] = {{"prompt_tokens", r.stats.prompt_tokens},
                {"image_tokens", r.stats.image_tokens},
                {"video_tokens", r.stats.video_tokens},
                {"cached_tokens", r.stats.cached_tokens},
                {"completion_tokens", r.stats.completion_tokens}};
  if (thinking) j["usage"]["reasoning_tokens"] = r.stats.reasoning_tokens;
  j["timings"] = {{"image_ms", r.stats.image_ms},   {"prompt_ms", r.stats.prompt_ms},
                  {"decode_ms", r.stats.decode_ms}, {"ttft_ms", r.stats.ttft_ms},
                  {"total_ms", r.stats.total_ms},   {"constraint_ms", r.stats.constraint_ms}};
  j["usage"]["draft_tokens"] = r.stats.draft_tokens;
  j["usage"]["draft_accepted_tokens"] = r.stats.draft_accepted_tokens;
  if (o.logprobs >= 0) j["logprobs"] = server::logprobs_json(r.logprobs)["content"];
  // Invalid UTF-8 cannot occur (the detokenizer emits whole characters), but never throw here.
  std::puts(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Answer one question (optionally about images)");
  cmd->add_option("-m,--model", opts->model,
                  "Model folder (Hugging Face layout), pre-packed file (qvl quantize), GGUF "
                  "language model (with --mmproj), folder of one GGUF pair, or hub id "
                  "Org/Name[@revision]")
      ->required();
  cmd->add_option("--mmproj", opts->mmproj,
                  "GGUF vision projector (mmproj-*.gguf) of a GGUF model (default: the one beside "
                  "it)");
  cmd->add_flag("--offline", opts->offline, "Never download (also HF_HUB_OFFLINE=1)");
  cmd->add_option("prompt", opts->prompt, "The question");
  cmd->add_option("--system", opts->system, "System prompt");
  cmd->add_option("--image", opts->images, "Image file (repeatable; shown before the question)")
      ->allow_extra_args(false);
  cmd->add_option("--messages", opts->messages_file,
                  "OpenAI-style messages JSON (image and video parts: paths, file:// URLs or data: "
                  "URIs)");
  cmd->add_option("--threads", opts->threads, "Threads (default: physical cores)")
      ->check(CLI::Range(0, ThreadPool::kMaxThreads));
  cmd->add_option("--quant", opts->quant,
                  "Weights: exact (fp32 oracle), bf16, q8 or q4 (default: q8 for a folder, as "
                  "stored for a pre-packed file)")
      ->check(CLI::IsMember({"exact", "bf16", "q8", "q4"}));
  cmd->add_option("--lm-head", opts->lm_head,
                  "Output head type with bf16/q8/q4 weights: bf16, q8 or q4 (default: q8, bf16 for "
                  "bf16; as stored for a pre-packed file)")
      ->check(CLI::IsMember({"bf16", "q8", "q4"}));
  cmd->add_option("--vision-quant", opts->vision_quant,
                  "Vision tower's big matrices: bf16 or q8 (default for a folder: q8 with --quant "
                  "q4, else bf16; as "
                  "stored for a pre-packed file)")
      ->check(CLI::IsMember({"bf16", "q8"}));
  cmd->add_option("--kv-type", opts->kv_type,
                  "KV cache with bf16/q8/q4 weights: f16 (default) or q8 (8-bit, 0.56x the memory)")
      ->check(CLI::IsMember({"f16", "q8"}));
  add_draft_flags(cmd, opts->speculative);
  cmd->add_option("--video", opts->videos,
                  "Video file: MP4, WebM, MKV, MOV, animated GIF/WebP (repeatable; after the "
                  "images, before the question)")
      ->allow_extra_args(false)
      ->check(CLI::ExistingFile);
  cmd->add_option("--file", opts->files,
                  "Document: PDF or multi-page TIFF (repeatable; each page an image with a page "
                  "marker, before the question)")
      ->allow_extra_args(false)
      ->check(CLI::ExistingFile);
  cmd->add_option("--pages", opts->documents.pages,
                  "Pages of each --file, e.g. 1-3,5 (default: all)");
  cmd->add_option("--page-tokens", opts->documents.page_tokens,
                  "Image token budget of a document page (1 token = 32x32 px)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{4}, int64_t{16384}));
  cmd->add_flag("--file-text", opts->documents.text,
                "Add each PDF page's text layer after its image");
  cmd->add_flag("--file-text-only", opts->documents.text_only,
                "Send each PDF page's text layer instead of its image (born-digital PDFs)");
  cmd->add_option("--file-password", opts->documents.password, "Password of an encrypted PDF");
  opts->video.add_to(*cmd);
  cmd->add_option("--image-min-tokens", opts->image_min_tokens,
                  "Fewest tokens per image (1 token = 32x32 px; default 64)");
  cmd->add_option("--image-max-tokens", opts->image_max_tokens,
                  "Most tokens per image (default 1024)");
  cmd->add_flag("--json", opts->json,
                "Print one JSON object (ids, text, timings) instead of streaming");
  cmd->add_option("--json-schema", opts->json_schema_file,
                  "Constrained decoding: the answer is JSON matching this JSON Schema file "
                  "(subset: see README)");
  cmd->add_flag("--json-object", opts->json_object,
                "Constrained decoding: the answer is a JSON object");
  cmd->add_flag("--show-reasoning", opts->show_reasoning,
                "Thinking models: print the reasoning before the answer (dimmed on a terminal); "
                "hidden by default. --json always has it as \"reasoning\"");
  cmd->add_option("--logprobs", opts->logprobs,
                  "With --json: each generated token's log-probability (the model's distribution, "
                  "before temperature and penalties) and N most likely alternatives")
      ->check(CLI::Range(0, 20));
  opts->sampling.add_to(*cmd);
  cmd->callback([opts] { run(*opts); });
}

}  // namespace qvl::cli
