// Throughput scenarios: aggregate decode speed with several streams at once (what continuous
// batching should raise), and the server's memory under many long conversations.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <thread>

#include "cli/latency_stats.h"
#include "cli/loadtest_scenarios.h"
#include "cli/prometheus_text.h"
#include "cli/stream_chunk.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

constexpr double kMiB = 1024.0 * 1024.0;

// A "VmRSS:" / "VmHWM:" line of /proc/<pid>/status in bytes; NaN if unreadable.
double proc_status_bytes(int pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) * 1024;
  }
  return NAN;
}

// The server's resident memory now, from /proc with a pid, else from its /metrics.
double server_rss_bytes(const LoadContext& context) {
  if (context.options().server_pid > 0)
    return proc_status_bytes(context.options().server_pid, "VmRSS");
  const HttpReply reply = context.client().get("/metrics");
  if (reply.status != 200) return NAN;
  const auto samples = parse_prometheus_text(reply.body);
  const auto it = samples.find("process_resident_memory_bytes");
  return it == samples.end() ? NAN : it->second;
}

// What the issue allows the server to hold: weights + KV budget + image-cache budget + 300 MB
// (buffers, the runtime); from /props. NaN when /props does not say.
double memory_budget_bytes(const LoadContext& context) {
  const HttpReply reply = context.client().get("/props");
  if (reply.status != 200) return NAN;
  const json props = json::parse(reply.body, nullptr, false);
  const json weights =
      props.is_object() ? props.value("/runtime/weights_bytes"_json_pointer, json()) : json();
  if (!weights.is_number() || !props.contains("cache")) return NAN;
  const json& cache = props["cache"];
  return weights.get<double>() + cache.value("kv_cache_bytes", 0.0) +
         cache.value("image_cache_bytes", 0.0) + 300e6;
}

}  // namespace

ScenarioResult run_concurrency(const LoadContext& context) {
  const LoadtestOptions& o = context.options();
  ScenarioResult result("concurrency");
  std::map<int, double> decode_rate;
  int prompt_index = 0;
  for (const int streams : o.concurrency) {
    std::vector<ChatStreamResult> responses(static_cast<size_t>(streams));
    std::vector<std::thread> threads;
    for (int i = 0; i < streams; ++i) {
      json body = context.chat_body(json::array({user_message(long_answer_prompt(prompt_index++))}),
                                    o.decode_tokens);
      body["logprobs"] = true;  // so that every token's arrival is seen, text or not
      body["top_logprobs"] = 0;
      threads.emplace_back([&, i, body] { responses[i] = context.client().stream_chat(body); });
    }
    for (std::thread& thread : threads) thread.join();
    const std::string level = std::to_string(streams);
    double first_token = INFINITY, sent = INFINITY, last_done = 0;
    int64_t completion = 0, decoded = 0;
    std::vector<double> ttft_ms;
    bool usable = true;
    for (int i = 0; i < streams; ++i) {
      const ChatStreamResult& r = responses[i];
      usable =
          check_response(result, r, level + " streams, stream " + std::to_string(i + 1)) && usable;
      if (!r.ok() || r.first_content_at < 0 || r.completion_tokens <= 0) continue;
      if (r.completion_tokens < o.decode_tokens) {
        result.notes.push_back(level + " streams: stream " + std::to_string(i + 1) +
                               " ended after " + std::to_string(r.completion_tokens) + " of " +
                               std::to_string(o.decode_tokens) + " tokens (" + r.finish_reason +
                               ")");
      }
      first_token = std::min(first_token, r.first_content_at);
      sent = std::min(sent, r.sent_at);
      last_done = std::max(last_done, r.done_at);
      completion += r.completion_tokens;
      decoded += r.completion_tokens - 1;  // the first token comes from the prefill
      ttft_ms.push_back(r.ttft() * 1000);
    }
    if (!usable || completion == 0) continue;
    // The span rate counts tokens after each stream's first over the span in which any stream
    // decodes, so it includes the later streams' prefills; the steady rate counts the tokens
    // of every stream while all of them decode (after the last first token, up to the first
    // last token): the batch's decode speed. The wall rate also includes the prefills.
    result.measure("decode_tok_per_s_" + level,
                   level + " streams: decode tok/s (aggregate, span of any decoding)",
                   decoded / (last_done - first_token));
    const double steady = steady_decode_rate(responses);
    if (std::isnan(steady)) {
      result.notes.push_back(level + " streams: too few tokens while all streams decoded (raise " +
                             "--decode-tokens) for a steady decode rate");
      continue;
    }
    decode_rate[streams] = steady;
    result.measure("steady_decode_tok_per_s_" + level,
                   level + " streams: decode tok/s (aggregate, while all decode)", steady);
    result.measure("wall_tok_per_s_" + level, level + " streams: tokens / wall time",
                   completion / (last_done - sent));
    result.measure("ttft_median_ms_" + level, level + " streams: TTFT median (ms)",
                   median(ttft_ms));
  }
  if (decode_rate.count(1)) {
    for (const auto& [streams, rate] : decode_rate) {
      if (streams == 1) continue;
      const std::string key = "speedup_" + std::to_string(streams);
      result.measure(key, std::to_string(streams) + " streams vs 1: decode speed-up",
                     rate / decode_rate[1]);
      if (streams == 4) result.add_target(key, false, 3.0);
      if (streams == 8) result.add_target(key, false, 4.5);
    }
  }
  return result;
}

ScenarioResult run_memory(const LoadContext& context) {
  const LoadtestOptions& o = context.options();
  ScenarioResult result("memory");
  const double rss_before = server_rss_bytes(context);
  std::mutex mutex;
  std::atomic<bool> done{false};
  double peak = rss_before;
  std::thread sampler([&] {
    while (!done.load()) {
      const double rss = server_rss_bytes(context);
      if (std::isfinite(rss)) peak = std::isfinite(peak) ? std::max(peak, rss) : rss;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });

  constexpr int kMaxRetries = 120;
  const int answer_tokens = std::max(o.decode_tokens / 2, 1);
  int turns_done = 0, refused = 0, gave_up = 0;
  std::vector<std::thread> conversations;
  for (int c = 0; c < o.memory_conversations; ++c) {
    conversations.emplace_back([&, c] {
      json messages = json::array(
          {user_message("Describe this picture in detail.", context.fresh_image_uri())});
      for (int turn = 1; turn <= o.memory_turns; ++turn) {
        if (turn > 1) messages.push_back(user_message(follow_up_question(c + turn)));
        ChatStreamResult response;
        for (int attempt = 0;; ++attempt) {
          response = context.client().stream_chat(context.chat_body(messages, answer_tokens));
          const bool refusal = response.status == 429 || response.status == 503;
          if (!refusal || attempt == kMaxRetries) break;
          {
            std::lock_guard lock(mutex);
            result.count_status(response.status);
            ++refused;
          }
          // Retry-After is whole seconds; honour it within reason.
          const int wait = std::clamp(std::atoi(response.retry_after.c_str()), 1, 10);
          std::this_thread::sleep_for(std::chrono::seconds(wait));
        }
        std::lock_guard lock(mutex);
        const std::string what =
            "conversation " + std::to_string(c + 1) + " turn " + std::to_string(turn);
        if (!check_response(result, response, what, true)) {
          ++gave_up;
          return;
        }
        ++turns_done;
        messages.push_back(assistant_message(response.text));
      }
    });
  }
  for (std::thread& thread : conversations) thread.join();
  done = true;
  sampler.join();

  if (refused > 0) {
    result.notes.push_back(std::to_string(refused) +
                           " requests were refused (429 queue full / 503) and retried: the "
                           "server's --parallel/--queue are smaller than this load");
  }
  result.measure("conversations", "concurrent conversations", o.memory_conversations);
  result.measure("turns_completed", "turns answered", turns_done);
  result.measure("conversations_abandoned", "conversations abandoned", gave_up);
  result.measure("rss_before_mib", "server resident memory before (MiB)", rss_before / kMiB);
  result.measure("peak_rss_mib", "server resident memory, peak sampled (MiB)", peak / kMiB);
  if (o.server_pid > 0) {
    result.measure("vm_hwm_mib", "server VmHWM, lifetime peak (MiB)",
                   proc_status_bytes(o.server_pid, "VmHWM") / kMiB);
  }
  result.numbers["rss_source"] = o.server_pid > 0 ? "/proc/<pid>/status" : "/metrics";
  const double budget = memory_budget_bytes(context);
  if (std::isfinite(budget)) {
    result.measure("budget_mib", "weights + KV budget + image-cache budget + 300 MB (MiB)",
                   budget / kMiB);
    result.add_target("peak_rss_mib", true, budget / kMiB);
  } else {
    result.notes.push_back("the server's /props gives no weights_bytes: memory budget unknown");
  }
  return result;
}

}  // namespace qvl::cli
