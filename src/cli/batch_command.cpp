#include "cli/batch_command.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/batch_documents.h"
#include "cli/batch_inputs.h"
#include "cli/batch_item_runner.h"
#include "cli/batch_output.h"
#include "cli/batch_progress.h"
#include "cli/draft_flags.h"
#include "cli/sampling_flags.h"
#include "cli/video_files.h"
#include "hub/model_pull.h"
#include "server/api_error.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

struct BatchOptions {
  std::string model;
  bool offline = false;
  int threads = 0;
  std::string quant;
  std::string kv_type;  // empty: f16
  int64_t image_min_tokens = 0;
  int64_t image_max_tokens = 0;
  std::vector<std::string> inputs;
  std::string requests_file;
  std::string prompt;
  std::string preset;
  std::string system;
  std::string json_schema_file;
  bool json_object = false;
  std::string output;
  int concurrency = 0;  // 0: the engine's max batch
  SamplingFlags sampling;
  VideoFlags video;
  SpeculativeOptions speculative;
  bool max_tokens_given = false;
  bool per_document = false;  // one line per document with its pages (cli/batch_documents.h)
};

// SIGINT/SIGTERM count; the handler only increments it (async-signal-safe).
std::atomic<int> g_interrupts{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_interrupt(int) {
  g_interrupts.fetch_add(1);
}

class SignalGuard {
 public:
  SignalGuard() {
    g_interrupts = 0;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Fields every request gets unless it sets them: the sampling flags given, structured output.
json request_defaults(const BatchOptions& o) {
  json d = json::object();
  const SamplingFlags& s = o.sampling;
  if (s.temperature) d["temperature"] = *s.temperature;
  if (s.top_p) d["top_p"] = *s.top_p;
  if (s.top_k) d["top_k"] = *s.top_k;
  if (s.min_p) d["min_p"] = *s.min_p;
  if (s.repetition_penalty) d["repetition_penalty"] = *s.repetition_penalty;
  if (s.presence_penalty) d["presence_penalty"] = *s.presence_penalty;
  if (s.frequency_penalty) d["frequency_penalty"] = *s.frequency_penalty;
  if (s.seed) d["seed"] = *s.seed;
  if (!s.stop.empty()) d["stop"] = s.stop;
  if (o.max_tokens_given) d["max_tokens"] = s.max_tokens;
  if (o.preset == "ocr" && !d.contains("temperature")) d["temperature"] = 0;  // as the web page
  if (!o.json_schema_file.empty()) {
    const json schema = json::parse(read_text_file(o.json_schema_file), nullptr, false);
    if (!schema.is_object()) {
      fail(ErrorCode::kInvalidArgument,
           "--json-schema: '" + o.json_schema_file + "' does not hold a JSON object");
    }
    d["response_format"] = {
        {"type", "json_schema"},
        {"json_schema", {{"name", "output"}, {"schema", schema}, {"strict", true}}}};
  } else if (o.json_object) {
    d["response_format"] = {{"type", "json_object"}};
  }
  return d;
}

// The body every image's (or video's) request starts from: optional system turn, then the prompt.
json file_body_template(const BatchOptions& o, const std::string& medium) {
  std::string prompt = o.preset.empty() ? o.prompt : preset_prompt(o.preset, medium);
  if (!o.preset.empty() && !o.prompt.empty()) prompt += "\nFocus on: " + o.prompt;
  json messages = json::array();
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  messages.push_back(
      {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", prompt}}})}});
  return {{"messages", messages}};
}

void run_batch(const BatchOptions& o) {
  const bool image_mode = o.requests_file.empty();
  if (image_mode == o.inputs.empty()) {
    fail(ErrorCode::kInvalidArgument, "give image files or folders, or --requests FILE (not both)");
  }
  if (image_mode && o.prompt.empty() && o.preset.empty()) {
    fail(ErrorCode::kInvalidArgument, "give --prompt TEXT or --preset ocr|describe");
  }
  if (!image_mode && (!o.prompt.empty() || !o.preset.empty() || !o.system.empty())) {
    fail(ErrorCode::kInvalidArgument, "--prompt, --preset and --system are for image inputs");
  }
  if (!o.json_schema_file.empty() && o.json_object) {
    fail(ErrorCode::kInvalidArgument, "--json-schema and --json-object exclude each other");
  }
  if (!image_mode && o.per_document) {
    fail(ErrorCode::kInvalidArgument,
         "--per-document is for document files (a --requests line with a file part already "
         "gets one answer for its pages)");
  }
  const json defaults = request_defaults(o);
  const json image_template = image_mode ? file_body_template(o, "image") : json();
  BatchInputs inputs = image_mode
                           ? image_inputs(o.inputs, image_template, file_body_template(o, "video"),
                                          file_body_template(o, "document page"))
                           : request_inputs(o.requests_file);
  const ResumeState resume = resume_output(o.output);
  if (resume.cut_partial_line) {
    std::fprintf(stderr, "qvl batch: %s ended in half a line (an interrupted write); removed it\n",
                 o.output.c_str());
  }
  std::vector<const BatchItem*> todo;
  for (const BatchItem& item : inputs.items) {
    const std::string& id = o.per_document ? per_document_id(item) : item.id;
    if (!resume.done_ids.count(id)) todo.push_back(&item);
  }
  const int64_t skipped = static_cast<int64_t>(inputs.items.size() - todo.size());
  if (inputs.ignored_files > 0) {
    std::fprintf(stderr,
                 "qvl batch: ignoring %lld files without an image, document or video extension\n",
                 static_cast<long long>(inputs.ignored_files));
  }

  EngineOptions eo;
  hub::ResolveOptions resolve;
  resolve.offline = o.offline;
  eo.model_dir = hub::resolve_model(o.model, resolve, &eo.mmproj);
  eo.threads = o.threads;
  eo.quant = o.quant;
  eo.kv_type = o.kv_type;
  eo.speculative = o.speculative;
  eo.image_min_tokens = o.image_min_tokens;
  eo.image_max_tokens = o.image_max_tokens;
  o.video.apply(eo);
  const int concurrency = o.concurrency > 0 ? o.concurrency : static_cast<int>(eo.max_batch);
  eo.max_batch = std::max<int64_t>(eo.max_batch, concurrency);
  auto engine = Engine::load(eo);
  BatchItemRunner runner(*engine, defaults, inputs.base_dir, o.sampling.ignore_eos);
  if (image_mode) {
    // A request-wide problem (e.g. an unsupported response_format) stops the run here, not
    // once per image.
    try {
      runner.translate(runner.request_body(BatchItem{"", "", image_template, ""}));
    } catch (const server::ApiError& e) {
      fail(ErrorCode::kInvalidArgument, "the request for every image is refused: " + e.message());
    }
  }

  JsonlWriter writer(o.output);
  const bool terminal = isatty(fileno(stderr)) != 0;
  const bool pages_only = !todo.empty() && std::all_of(todo.begin(), todo.end(),
                                                       [](auto* item) { return item->page > 0; });
  BatchProgress progress(static_cast<int64_t>(todo.size()), skipped, terminal,
                         pages_only ? "pages" : "images");
  DocumentLines documents(o.per_document ? todo : std::vector<const BatchItem*>{});
  std::atomic<size_t> next{0};
  std::atomic<bool> stop_taking{false}, cancel{false};
  std::mutex mutex;
  std::condition_variable changed;
  int workers_left = std::min<int>(concurrency, static_cast<int>(todo.size()));
  std::exception_ptr write_error;
  const SignalGuard signals;
  std::vector<std::thread> workers;
  for (int w = workers_left; w > 0; --w) {
    workers.emplace_back([&] {
      for (size_t i; !stop_taking.load() && (i = next.fetch_add(1)) < todo.size();) {
        const std::optional<BatchLine> line = runner.run(*todo[i], cancel);
        if (!line) continue;  // cancelled: left for the next run
        try {
          const std::optional<json> out =
              o.per_document ? documents.add(*todo[i], line->line) : line->line;
          if (out) writer.write(*out);
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!write_error) write_error = std::current_exception();
          stop_taking = true;
          cancel = true;
          break;
        }
        progress.finished(todo[i]->id, line->error, line->prompt_tokens, line->completion_tokens);
      }
      std::lock_guard lock(mutex);
      --workers_left;
      changed.notify_all();
    });
  }
  int handled_interrupts = 0;
  {
    std::unique_lock lock(mutex);
    while (workers_left > 0) {
      changed.wait_for(lock, std::chrono::milliseconds(250));  // also polls for signals
      const int interrupts = g_interrupts.load();
      if (interrupts > handled_interrupts) {
        handled_interrupts = interrupts;
        stop_taking = true;
        if (interrupts >= 2) cancel = true;
        lock.unlock();
        progress.note(interrupts >= 2 ? "qvl batch: stopping the running inputs"
                                      : "qvl batch: interrupted; finishing the running inputs "
                                        "(interrupt again to stop them now)");
        lock.lock();
      }
      lock.unlock();
      progress.redraw();
      lock.lock();
    }
  }
  for (std::thread& t : workers) t.join();
  if (write_error) std::rethrow_exception(write_error);
  const BatchTotals totals = progress.totals();
  // An interrupt that came after the last input was taken changed nothing.
  const bool interrupted =
      handled_interrupts > 0 && totals.done + totals.failed < static_cast<int64_t>(todo.size());
  std::fprintf(stderr, "%s\n", progress.summary(interrupted).c_str());
  // CLI11 prints nothing for a RuntimeError: the message goes out here.
  if (interrupted) {
    std::fprintf(stderr, "qvl batch: interrupted; run the same command again to resume\n");
    throw CLI::RuntimeError(130);
  }
  if (totals.failed > 0) {
    std::fprintf(stderr, "qvl batch: %lld inputs failed; their lines in %s say why\n",
                 static_cast<long long>(totals.failed), o.output.c_str());
    throw CLI::RuntimeError(2);
  }
}

}  // namespace

void add_batch_command(CLI::App& app) {
  auto o = std::make_shared<BatchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "batch",
      "Answer a prompt about many images, documents or videos, or a JSONL file of chat requests, "
      "into a JSONL file");
  cmd->add_option("-m,--model", o->model,
                  "Model folder (Hugging Face layout), pre-packed file (qvl quantize) or hub id")
      ->required();
  cmd->add_option("inputs", o->inputs,
                  "Image files and folders (a folder's .jpg .jpeg .png .webp .gif .bmp files); "
                  "documents (.pdf .tif .tiff) give one output line per page, videos (.mp4 .m4v "
                  ".mov .webm .mkv) one line each");
  cmd->add_option("--requests", o->requests_file,
                  "JSONL file: one OpenAI chat request body per line with an id or custom_id "
                  "(or OpenAI Batch API lines); images and videos as data: or file:// URLs");
  cmd->add_option("--prompt", o->prompt,
                  "The question for every image or video (with --preset: a focus)");
  cmd->add_option("--preset", o->preset, "ocr (read all text verbatim) or describe")
      ->check(CLI::IsMember({"ocr", "describe"}));
  cmd->add_option("--system", o->system, "System prompt for every image");
  cmd->add_option("--json-schema", o->json_schema_file,
                  "JSON Schema file: answers are JSON following it (response_format json_schema), "
                  "written parsed");
  cmd->add_flag("--json-object", o->json_object,
                "Answers are JSON objects (response_format json_object), written parsed");
  cmd->add_flag("--per-document", o->per_document,
                "One line per document (.pdf .tif .tiff) with its pages' answers in order "
                "(\"pages\": [{\"page\", \"answer\", ...}]) instead of a line per page; pages "
                "still run concurrently, and resume is per document");
  cmd->add_option("-o,--output", o->output,
                  "Output JSONL file; appended to, and ids already in it are skipped (resume)")
      ->required();
  cmd->add_option("--concurrency", o->concurrency,
                  "Inputs in flight at once (default: the engine's batch size, 16)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--offline", o->offline, "Never download (also HF_HUB_OFFLINE=1)");
  cmd->add_option("--threads", o->threads, "Threads (default: physical cores)");
  cmd->add_option("--quant", o->quant, "Weights: exact, bf16, q8 or q4 (as for qvl run)")
      ->check(CLI::IsMember({"exact", "bf16", "q8", "q4"}));
  cmd->add_option("--kv-type", o->kv_type, "KV cache: f16 (default) or q8 (as for qvl run)")
      ->check(CLI::IsMember({"f16", "q8"}));
  cmd->add_option("--image-min-tokens", o->image_min_tokens, "Fewest tokens per image");
  cmd->add_option("--image-max-tokens", o->image_max_tokens, "Most tokens per image");
  o->video.add_to(*cmd);
  add_draft_flags(cmd, o->speculative);
  o->sampling.add_to(*cmd);
  cmd->callback([o, cmd] {
    o->max_tokens_given = cmd->count("--max-tokens") > 0;
    run_batch(*o);
  });
}

}  // namespace qvl::cli
