// Latency scenarios: time to first token of later turns and repeated images (what prefix and
// image caches should shorten), and token gaps of running streams when an image arrives.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cli/latency_stats.h"
#include "cli/loadtest_scenarios.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

const char* const kFirstQuestion = "What is in this picture? Describe it briefly.";

// An answer without text (only special tokens) is timed to its end; say so.
void note_if_textless(ScenarioResult& result, const ChatStreamResult& response,
                      const std::string& what) {
  if (response.first_content_at < 0) {
    result.notes.push_back(what + ": the answer had no text; its TTFT is the time to its end");
  }
}

}  // namespace

ScenarioResult run_conversation(const LoadContext& context) {
  const LoadtestOptions& o = context.options();
  ScenarioResult result("conversation");
  json messages = json::array({user_message(kFirstQuestion, context.fresh_image_uri())});
  std::vector<double> ttft_ms;
  json prompt_tokens = json::array(), cached_tokens = json::array(), server_timings = json::array();
  for (int turn = 1; turn <= o.turns; ++turn) {
    const std::string name = "turn " + std::to_string(turn);
    if (turn > 1) messages.push_back(user_message(follow_up_question(turn - 2)));
    const ChatStreamResult response =
        context.client().stream_chat(context.chat_body(messages, o.answer_tokens));
    if (!check_response(result, response, name)) break;
    note_if_textless(result, response, name);
    ttft_ms.push_back(response.ttft() * 1000);
    prompt_tokens.push_back(response.prompt_tokens);
    cached_tokens.push_back(response.cached_tokens);
    server_timings.push_back(response.timings);
    result.measure("ttft_turn" + std::to_string(turn) + "_ms", "TTFT " + name + " (ms)",
                   ttft_ms.back());
    messages.push_back(assistant_message(response.text));
  }
  result.numbers["ttft_ms"] = ttft_ms;
  result.numbers["prompt_tokens"] = prompt_tokens;
  result.numbers["cached_tokens"] = cached_tokens;    // -1: the server does not report them
  result.numbers["server_timings"] = server_timings;  // where the server says the time went
  if (ttft_ms.size() >= 2) {
    result.measure("ttft_ratio", "TTFT turn 2 / turn 1", ttft_ms[1] / ttft_ms[0]);
    if (ttft_ms.size() > 2) {
      const double worst = *std::max_element(ttft_ms.begin() + 1, ttft_ms.end());
      result.measure("ttft_ratio_worst", "TTFT worst later turn / turn 1", worst / ttft_ms[0]);
      result.add_target("ttft_ratio_worst", true, 0.10);
    } else {
      result.add_target("ttft_ratio", true, 0.10);
    }
  }
  return result;
}

ScenarioResult run_same_image(const LoadContext& context) {
  const LoadtestOptions& o = context.options();
  ScenarioResult result("same-image");
  const std::string image = context.fresh_image_uri();
  const ChatStreamResult cold = context.client().stream_chat(
      context.chat_body(json::array({user_message(kFirstQuestion, image)}), o.answer_tokens));
  if (!check_response(result, cold, "cold request")) return result;
  note_if_textless(result, cold, "cold request");
  // A new conversation: only the image (and the chat template's preamble) is shared.
  const ChatStreamResult warm = context.client().stream_chat(context.chat_body(
      json::array({user_message(follow_up_question(0), image)}), o.answer_tokens));
  if (!check_response(result, warm, "same-image request")) return result;
  note_if_textless(result, warm, "same-image request");
  result.measure("ttft_cold_ms", "TTFT new image (ms)", cold.ttft() * 1000);
  result.measure("ttft_same_image_ms", "TTFT same image, new conversation (ms)",
                 warm.ttft() * 1000);
  result.measure("ttft_ratio", "TTFT same image / new image", warm.ttft() / cold.ttft());
  result.add_target("ttft_ratio", true, 0.50);
  result.numbers["prompt_tokens"] = {cold.prompt_tokens, warm.prompt_tokens};
  result.numbers["cached_tokens"] = {cold.cached_tokens, warm.cached_tokens};
  result.numbers["server_timings"] = {cold.timings, warm.timings};
  return result;
}

ScenarioResult run_interference(const LoadContext& context) {
  const LoadtestOptions& o = context.options();
  ScenarioResult result("interference");
  constexpr int kStreams = 3;
  std::vector<ChatStreamResult> streams(kStreams);
  std::mutex mutex;
  std::condition_variable changed;
  int started = 0, finished = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      json body = context.chat_body(json::array({user_message(long_answer_prompt(100 + i))}),
                                    o.interference_tokens);
      // Every token reaches the client, also one without text (which only its log-probability
      // carries): the gaps are between tokens, not between pieces of text. A model with random
      // weights repeats ids that have no text (e.g. 16 in a row), which read as a stall otherwise.
      body["logprobs"] = true;
      body["top_logprobs"] = 0;
      ChatStreamResult response = context.client().stream_chat(body, [&] {
        std::lock_guard lock(mutex);
        ++started;
        changed.notify_all();
      });
      std::lock_guard lock(mutex);
      streams[i] = std::move(response);
      ++finished;
      changed.notify_all();
    });
  }
  // The image arrives once every stream decodes, or as soon as one ends (a server that runs
  // fewer requests at once would otherwise keep the rest queued until then).
  int decoding_at_image = 0;
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return started == kStreams || finished > 0; });
    decoding_at_image = started - finished;
  }
  const double image_sent_at = context.client().now();
  const ChatStreamResult image = context.client().stream_chat(context.chat_body(
      json::array({user_message("Describe this picture in detail.", context.fresh_image_uri())}),
      o.answer_tokens));
  for (std::thread& thread : threads) thread.join();

  bool usable = check_response(result, image, "image request");
  note_if_textless(result, image, "image request");
  std::vector<double> gaps_ms, gaps_during_image_ms;
  int64_t textless_tokens = 0;
  const double image_first = image.sent_at + image.ttft();
  for (int i = 0; i < kStreams; ++i) {
    const std::string name = "stream " + std::to_string(i + 1);
    usable = check_response(result, streams[i], name) && usable;
    const std::vector<double>& times = streams[i].token_times;
    textless_tokens += streams[i].textless_tokens;
    for (size_t k = 1; k < times.size(); ++k) {
      gaps_ms.push_back((times[k] - times[k - 1]) * 1000);
      // A gap overlapping the image's way to its first token.
      if (times[k] >= image_sent_at && times[k - 1] <= image_first) {
        gaps_during_image_ms.push_back(gaps_ms.back());
      }
    }
  }
  if (!usable) return result;
  if (decoding_at_image < kStreams) {
    result.notes.push_back("only " + std::to_string(decoding_at_image) + " of " +
                           std::to_string(kStreams) +
                           " streams were decoding when the image request was sent (the server "
                           "runs fewer requests at once: see its --parallel)");
  }
  const LatencySummary summary = summarize(gaps_ms);
  result.measure("streams_decoding_at_image", "streams decoding when the image came",
                 decoding_at_image);
  result.measure("token_gaps", "token gaps measured", static_cast<double>(summary.count));
  result.measure("textless_tokens", "streamed tokens without text",
                 static_cast<double>(textless_tokens));
  result.measure("gap_median_ms", "token gap median (ms)", summary.median);
  result.measure("gap_p99_ms", "token gap p99 (ms)", summary.p99);
  result.measure("gap_max_ms", "token gap max (ms)", summary.max);
  result.measure("gap_max_during_image_ms", "largest gap while the image was prefilled (ms)",
                 gaps_during_image_ms.empty()
                     ? 0.0
                     : *std::max_element(gaps_during_image_ms.begin(), gaps_during_image_ms.end()));
  result.measure("image_ttft_ms", "TTFT of the image request (ms)", image.ttft() * 1000);
  result.measure("gap_ratio_p99_median", "token gap p99 / median", summary.p99 / summary.median);
  result.add_target("gap_ratio_p99_median", true, 2.5);
  return result;
}

}  // namespace qvl::cli
