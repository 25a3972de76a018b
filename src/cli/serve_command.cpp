#include "cli/serve_command.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "cli/draft_flags.h"
#include "hub/model_pull.h"
#include "server/server.h"

namespace qvl::cli {
namespace {

struct ServeFlags {
  server::ServerOptions options;
  double max_body_mb = 32;
  double max_image_mb = 16;
  bool allow_remote_images = false;
  double remote_timeout_seconds = 10;
  double min_body_kib_per_second = 16;
  std::string model_spec = hub::kDefaultModel;
  bool offline = false;
};

// Blocks SIGINT/SIGTERM in this thread and every thread it starts later, so that they are
// taken only by sigtimedwait below and never interrupt the engine or HTTP threads.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Every connection is a file descriptor: raise the soft limit to the hard one, and keep the
// connection cap below what is left (model files, pipes and the engine need some too).
void fit_connections_to_file_limit(server::ServerOptions& options) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr rlim_t kReserved = 128;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur <= kReserved) return;
  const rlim_t room = limit.rlim_cur - kReserved;
  if (static_cast<rlim_t>(options.max_connections) > room) {
    QVL_LOG(kWarn) << "--max-connections " << options.max_connections << " lowered to " << room
                   << " (open file limit " << limit.rlim_cur << ")";
    options.max_connections = static_cast<int>(room);
  }
}

int run_serve(ServeFlags& flags) {
  server::ServerOptions& options = flags.options;
  options.max_body_bytes = static_cast<size_t>(flags.max_body_mb * (1 << 20));
  options.limits.max_image_bytes = static_cast<size_t>(flags.max_image_mb * (1 << 20));
  options.engine.max_image_bytes = options.limits.max_image_bytes;
  options.limits.allow_remote_images = flags.allow_remote_images;
  options.min_body_bytes_per_second = flags.min_body_kib_per_second * 1024;
  fit_connections_to_file_limit(options);
  options.remote.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(flags.remote_timeout_seconds * 1000));

  // A hub id is resolved (and pulled on first use) by the background loader, so /health
  // answers "loading" meanwhile; clients see the hub id as the model name.
  if (options.model_alias.empty() && !file_exists(flags.model_spec)) {
    options.model_alias = flags.model_spec;
  }
  options.engine.model_dir = flags.model_spec;
  options.engine.max_batch = options.parallel;  // every admitted request decodes in the batch
  options.engine.idle_warm_kv_pages = 2;  // a follow-up question's partly shared page and one more
  hub::ResolveOptions resolve;
  resolve.offline = flags.offline;
  auto loader = [resolve](const EngineOptions& engine_options) {
    EngineOptions resolved = engine_options;
    resolved.model_dir = hub::resolve_model(engine_options.model_dir, resolve,
                                            resolved.mmproj.empty() ? &resolved.mmproj : nullptr);
    return Engine::load(resolved);
  };

  const sigset_t signals = block_stop_signals();
  server::Server server(options, loader);
  const int port = server.bind();
  // Scripts (and tests using --port 0) read the address from this line.
  std::printf("qvl serve: listening on http://%s:%d\n", options.host.c_str(), port);
  std::fflush(stdout);
  server.start();

  bool announced_ready = false;
  for (;;) {
    timespec tick{0, 100'000'000};
    const int signal = sigtimedwait(&signals, nullptr, &tick);
    if (signal == SIGINT || signal == SIGTERM) {
      QVL_LOG(kInfo) << "signal " << signal << ": finishing in-flight requests (grace "
                     << options.shutdown_grace_seconds << " s; a second signal stops at once)";
      std::atomic<bool> stopped{false};
      std::thread stopper([&] {
        server.shutdown();
        stopped.store(true);
      });
      while (!stopped.load()) {
        const int again = sigtimedwait(&signals, nullptr, &tick);
        if (again == SIGINT || again == SIGTERM) {
          QVL_LOG(kWarn) << "second signal " << again << ": exiting without waiting";
          std::fflush(nullptr);
          std::_Exit(128 + again);
        }
      }
      stopper.join();
      QVL_LOG(kInfo) << "stopped";
      return 0;
    }
    if (server.state() == server::Server::State::kFailed) {
      std::cerr << "qvl serve: cannot load the model: " << server.load_error() << "\n";
      server.shutdown();
      return 1;
    }
    if (!announced_ready && server.state() == server::Server::State::kReady) {
      announced_ready = true;
      QVL_LOG(kInfo) << "ready on http://" << options.host << ":" << port;
    }
  }
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  server::ServerOptions& o = flags->options;
  o.engine.quant.clear();  // no --quant: q8 for a folder, as stored for a pre-packed file
  CLI::App* serve = app.add_subcommand(
      "serve",
      "OpenAI-compatible vision chat server (POST /v1/chat/completions, GET /v1/models, "
      "POST /tokenize, GET /health, GET /metrics)");
  serve
      ->add_option("-m,--model", flags->model_spec,
                   "Model folder, pre-packed file, GGUF language model (with --mmproj), folder "
                   "of one GGUF pair, or hub id Org/Name[@revision]")
      ->capture_default_str();
  serve->add_option("--mmproj", o.engine.mmproj,
                    "GGUF vision projector (mmproj-*.gguf) of a GGUF model (default: the one "
                    "beside it)");
  serve->add_flag("--offline", flags->offline, "Never download (also HF_HUB_OFFLINE=1)");
  serve
      ->add_option("--quant", o.engine.quant,
                   "Weights: exact (fp32 oracle), bf16, q8 or q4 (default: q8 for a folder, as "
                   "stored for a pre-packed file)")
      ->check(CLI::IsMember({"exact", "bf16", "q8", "q4"}));
  serve
      ->add_option("--lm-head", o.engine.lm_head,
                   "Output head type with bf16/q8/q4 weights: bf16, q8 or q4 (default: q8, bf16 "
                   "for bf16; as stored for a pre-packed file)")
      ->check(CLI::IsMember({"bf16", "q8", "q4"}));
  serve
      ->add_option("--vision-quant", o.engine.vision_quant,
                   "Vision tower's big matrices: bf16 or q8 (default for a folder: q8 with --quant "
                   "q4, else bf16; as "
                   "stored for a pre-packed file)")
      ->check(CLI::IsMember({"bf16", "q8"}));
  serve
      ->add_option(
          "--kv-type", o.engine.kv_type,
          "KV cache with bf16/q8/q4 weights: f16 (default) or q8 (8-bit, 0.56x the memory)")
      ->check(CLI::IsMember({"f16", "q8"}));
  serve->add_option("--host", o.host, "Address to listen on")->capture_default_str();
  serve->add_option("--port", o.port, "Port; 0 picks a free one (printed on stdout)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  serve->add_option("--alias", o.model_alias, "Model id to report (default: the folder name)");
  serve->add_option("-t,--threads", o.engine.threads, "Compute threads (0 = one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, ThreadPool::kMaxThreads));
  serve->add_option("--parallel", o.parallel, "Requests generating at once (one batch)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  serve->add_option("--queue", o.queue, "Requests that may wait for a slot; more get 429")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  serve
      ->add_option("--timeout", o.request_timeout_seconds,
                   "Per-request deadline in seconds (queueing included)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  serve
      ->add_option("--shutdown-grace,--grace", o.shutdown_grace_seconds,
                   "Seconds in-flight requests get to finish after SIGINT/SIGTERM")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  serve
      ->add_option("--api-key", o.api_key,
                   "Require 'Authorization: Bearer KEY' on /v1/* and /tokenize")
      ->envname("QVL_API_KEY");
  serve->add_option("--cors-origin", o.cors_origin,
                    "Allow browser calls from this origin ('*' for any); off by default");
  serve->add_option("--max-body-mb", flags->max_body_mb, "Largest request body (MiB)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1024.0));
  serve->add_option("--max-image-mb", flags->max_image_mb, "Largest encoded image (MiB)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1024.0));
  serve->add_option("--max-images", o.limits.max_images, "Images per request")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  serve
      ->add_option("--max-image-pixels", o.engine.max_image_pixels,
                   "Largest decoded image (width x height)")
      ->capture_default_str();
  serve
      ->add_option("--image-max-tokens", o.engine.image_max_tokens,
                   "Default image token budget (detail=auto; 0 = engine default)")
      ->capture_default_str();
  serve
      ->add_option("--max-image-tokens-per-request", o.limits.max_total_image_tokens,
                   "Total image tokens of one request")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 24));
  // Videos (video_url / video parts): the defaults requests may lower (fps: raise up to its cap).
  serve->add_option("--video-fps", o.engine.video_fps, "Video frames sampled per second (0: 2)");
  serve->add_option("--video-max-fps", o.engine.video_max_fps,
                    "Highest fps a request may ask (0: 8)");
  serve->add_option("--video-max-frames", o.engine.video_max_frames,
                    "Most frames sampled from one video (0: 128)");
  serve->add_option("--video-max-pixels", o.engine.video_max_pixels,
                    "Most pixels of one video's sampled frames together (0: 8388608, 4096 tokens)");
  serve
      ->add_option_function<double>(
          "--max-video-mb",
          [options = &o](double mb) {
            options->limits.max_video_bytes = static_cast<size_t>(mb * (1 << 20));
            options->engine.max_video_bytes = options->limits.max_video_bytes;
          },
          "Largest encoded video file (MiB)")
      ->default_str("64")
      ->check(CLI::Range(0.001, 4096.0));
  serve->add_option("--max-videos", o.limits.max_videos, "Videos per request")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  // Documents (`file` parts: PDF, TIFF; docs/documents.md).
  serve
      ->add_option_function<double>(
          "--max-document-mb",
          [options = &o](double mb) {
            options->limits.documents.render.max_bytes = static_cast<uint64_t>(mb * (1 << 20));
          },
          "Largest PDF or TIFF file (MiB)")
      ->default_str("20")
      ->check(CLI::Range(0.001, 1024.0));
  serve
      ->add_option("--max-document-pages", o.limits.documents.render.max_pages,
                   "Pages of a document read in one request")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  serve
      ->add_option("--max-document-seconds", o.limits.documents.render.max_seconds,
                   "Time to render one document's pages (wall clock and CPU)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  serve
      ->add_option("--document-page-tokens", o.limits.documents.page_tokens,
                   "Image token budget of a document page (detail=auto)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{4}, int64_t{16384}));
  serve
      ->add_option("--document-renders", o.limits.documents.concurrent_renders,
                   "Documents rendering at once (others wait up to --max-document-seconds, "
                   "then get 503)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  serve->add_option("--ctx-size", o.engine.max_context, "Context length (0 = the model's)")
      ->capture_default_str();
  serve
      ->add_option("--kv-cache-mb", o.engine.kv_cache_mb,
                   "KV cache pool of all requests, MiB (0 = 2048); idle pages keep prefixes "
                   "for reuse")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  add_draft_flags(serve, o.engine.speculative);
  serve->add_flag("!--no-prefix-cache", o.engine.prefix_cache,
                  "Free a finished request's KV pages at once and never reuse prompts (every "
                  "prompt computed in full; no request's speed depends on another's prompt)");
  serve
      ->add_option("--image-cache-mb", o.engine.image_cache_mb,
                   "Vision features of recent images, MiB (0 = 256, -1 = off)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 22));
  serve
      ->add_option("--prefill-chunk", o.engine.prefill_chunk,
                   "Prompt tokens per chunk while other requests decode (its layers are spread "
                   "over their steps)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 20));
  serve->add_flag("--allow-remote-images", flags->allow_remote_images,
                  "Fetch http(s) image URLs (public addresses only)");
  serve
      ->add_option("--remote-image-timeout", flags->remote_timeout_seconds,
                   "Seconds allowed for fetching one remote image")
      ->capture_default_str();
  serve
      ->add_option("--read-timeout", o.read_timeout_seconds,
                   "Seconds a client has for a request's headers, and may pause within its body")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  serve
      ->add_option("--write-timeout", o.write_timeout_seconds,
                   "Seconds a client may stop reading a response before it is dropped")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  serve
      ->add_option("--min-body-rate", flags->min_body_kib_per_second,
                   "Slowest accepted request body, KiB/s on average (after --read-timeout)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  serve
      ->add_option("--max-connections", o.max_connections,
                   "Open client connections; more are answered 503 and closed")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  serve
      ->add_option("--max-connections-per-ip", o.max_connections_per_ip,
                   "Open connections per client address (0 = no cap; set it when clients "
                   "connect directly rather than through a proxy)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  serve->callback([flags] {
    int code = 0;
    try {
      code = run_serve(*flags);
    } catch (const Error& error) {
      std::cerr << "qvl serve: " << error.what() << "\n";
      code = 1;
    }
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace qvl::cli
