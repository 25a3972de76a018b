#include "cli/loadtest_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include "base/error.h"
#include "cli/loadtest_scenarios.h"
#include "cli/prometheus_text.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

struct Scenario {
  const char* name;
  ScenarioResult (*run)(const LoadContext&);
};

const Scenario kScenarios[] = {
    {"conversation", run_conversation},
    {"same-image", run_same_image},
    {"concurrency", run_concurrency},
    {"interference", run_interference},
    {"memory", run_memory},
};

void progress(const std::string& text) {
  std::fprintf(stderr, "qvl loadtest: %s\n", text.c_str());
}

// Polls /health until the model is loaded, then returns the served model id.
std::string wait_until_ready(const ChatStreamClient& client, double timeout_seconds) {
  const double deadline = client.now() + timeout_seconds;
  for (bool told = false;;) {
    const HttpReply health = client.get("/health");
    if (health.status == 200) break;
    if (client.now() > deadline) {
      fail(ErrorCode::kIo,
           "the server is not ready after " + std::to_string(static_cast<int>(timeout_seconds)) +
               " s (" +
               (health.status
                    ? "GET /health answered " + std::to_string(health.status) + " " + health.body
                    : health.error) +
               ")");
    }
    if (!told) progress("waiting for the server to be ready...");
    told = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const HttpReply models = client.get("/v1/models");
  const json list = json::parse(models.body, nullptr, false);
  if (models.status != 200 || !list.contains("data") || !list["data"].is_array() ||
      list["data"].empty()) {
    fail(ErrorCode::kIo,
         "GET /v1/models did not list a model (HTTP " + std::to_string(models.status) + ")");
  }
  return list["data"][0].value("id", std::string());
}

std::map<std::string, double> scrape(const ChatStreamClient& client) {
  const HttpReply reply = client.get("/metrics");
  return reply.status == 200 ? parse_prometheus_text(reply.body) : std::map<std::string, double>();
}
// The server books a request's tokens just after its stream ends: wait (briefly) for it to be
// idle so that one scenario's requests do not show up in the next one's metrics or timings.
std::map<std::string, double> scrape_when_idle(const ChatStreamClient& client) {
  const double deadline = client.now() + 5;
  for (;;) {
    auto samples = scrape(client);
    const auto busy = [&](const char* gauge) {
      const auto it = samples.find(gauge);
      return it != samples.end() && it->second > 0;
    };
    if ((!busy("qvl_active_requests") && !busy("qvl_queue_depth")) || client.now() > deadline) {
      return samples;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Scrapes of /metrics and /health count themselves; they say nothing about the scenario.
std::vector<MetricChange> scenario_changes(const std::map<std::string, double>& before,
                                           const std::map<std::string, double>& after) {
  std::vector<MetricChange> changes;
  for (MetricChange& change : changed_samples(before, after, "qvl_")) {
    const std::string& s = change.sample;
    if (s.find("endpoint=\"/metrics\"") != std::string::npos ||
        s.find("endpoint=\"/health\"") != std::string::npos) {
      continue;
    }
    changes.push_back(std::move(change));
  }
  return changes;
}

// One short request with its own image: faults in the weights and the vision tower, so that the
// first measured request is not also the first the server ever ran.
void warm_up(const LoadContext& context) {
  progress("warm-up request");
  const ChatStreamResult response = context.client().stream_chat(
      context.chat_body(json::array({user_message("Say hello.", context.fresh_image_uri())}), 2));
  if (!response.ok()) {
    fail(ErrorCode::kIo, "the warm-up request failed: HTTP " + std::to_string(response.status) +
                             " " + response.error);
  }
}

int run_loadtest(const LoadtestOptions& options) {
  for (const std::string& name : options.scenarios) {
    bool known = false;
    for (const Scenario& s : kScenarios) known = known || name == s.name;
    if (!known) fail(ErrorCode::kInvalidArgument, "unknown scenario '" + name + "'");
  }
  const ChatStreamClient probe(options.url, options.api_key, options.request_timeout_seconds);
  const std::string model_id = wait_until_ready(probe, options.ready_timeout_seconds);
  const LoadContext context(options, model_id);
  if (options.warmup) warm_up(context);

  std::vector<ScenarioResult> results;
  for (const Scenario& scenario : kScenarios) {
    const auto& chosen = options.scenarios;
    if (!chosen.empty() && std::find(chosen.begin(), chosen.end(), scenario.name) == chosen.end()) {
      continue;
    }
    progress(std::string("scenario ") + scenario.name);
    const auto before = scrape_when_idle(context.client());
    ScenarioResult result = scenario.run(context);
    result.metric_changes = scenario_changes(before, scrape_when_idle(context.client()));
    results.push_back(std::move(result));
  }

  bool failures = false;
  json scenarios = json::array();
  for (const ScenarioResult& result : results) {
    failures = failures || !result.failures.empty();
    scenarios.push_back(result.to_json());
  }
  if (options.json) {
    const json report = {{"url", options.url}, {"model", model_id}, {"scenarios", scenarios}};
    std::printf("%s\n", report.dump().c_str());
  } else {
    std::printf("qvl loadtest against %s (model %s)\n%s", options.url.c_str(), model_id.c_str(),
                format_table(results).c_str());
  }
  // Missed targets are results, not errors; requests that went wrong are.
  return failures ? 2 : 0;
}

}  // namespace

void add_loadtest_command(CLI::App& app) {
  auto options = std::make_shared<LoadtestOptions>();
  LoadtestOptions& o = *options;
  CLI::App* cmd = app.add_subcommand(
      "loadtest",
      "Measure serving targets against a running `qvl serve`: conversation (TTFT of later turns), "
      "same-image (TTFT of a repeated image), concurrency (decode tok/s with 1/4/8 streams), "
      "interference (token gaps when an image arrives), memory (16 long conversations)");
  cmd->add_option("--url", o.url, "Server address")->capture_default_str();
  cmd->add_option("--scenario", o.scenarios,
                  "Scenario to run (repeatable; default all): conversation, same-image, "
                  "concurrency, interference, memory");
  cmd->add_option("--api-key", o.api_key, "Bearer key of the server")->envname("QVL_API_KEY");
  cmd->add_option("--turns", o.turns, "conversation: turns")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  cmd->add_option("--answer-tokens", o.answer_tokens, "max_tokens of latency requests")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--decode-tokens", o.decode_tokens,
                  "max_tokens of concurrency streams (memory turns get half)")
      ->capture_default_str()
      ->check(CLI::Range(2, 8192));
  cmd->add_option("--interference-tokens", o.interference_tokens,
                  "max_tokens of the streams in the interference scenario")
      ->capture_default_str()
      ->check(CLI::Range(2, 8192));
  cmd->add_option("--concurrency", o.concurrency, "concurrency: stream counts, e.g. 1,4,8")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--conversations", o.memory_conversations, "memory: concurrent conversations")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--memory-turns", o.memory_turns, "memory: turns per conversation")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--image-size", o.image_size, "Side of the drawn square images (pixels)")
      ->capture_default_str()
      ->check(CLI::Range(32, 4096));
  cmd->add_option("--server-pid", o.server_pid,
                  "memory: read the server's VmRSS/VmHWM from /proc (else /metrics)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--request-timeout", o.request_timeout_seconds, "Seconds per request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ready-timeout", o.ready_timeout_seconds,
                  "Seconds to wait for /health to report the model loaded")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("!--no-warmup", o.warmup, "Skip the warm-up request");
  cmd->add_flag("--json", o.json, "Print one JSON object (scenarios with numbers and targets)");
  cmd->callback([options] {
    const int code = run_loadtest(*options);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace qvl::cli
