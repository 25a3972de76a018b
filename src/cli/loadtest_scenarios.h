// The scenarios of `qvl loadtest`: each drives a running `qvl serve` through its OpenAI API and
// measures one serving target (see loadtest_command.cpp for the list).
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/chat_stream_client.h"
#include "cli/loadtest_report.h"

namespace qvl::cli {

struct LoadtestOptions {
  std::string url = "http://127.0.0.1:8080";
  std::string api_key;
  std::vector<std::string> scenarios;  // empty: all
  int turns = 2;                       // conversation: turns per conversation
  int answer_tokens = 16;              // max_tokens of latency requests
  int decode_tokens = 64;              // max_tokens of throughput streams
  int interference_tokens = 96;        // max_tokens of the streams an image interrupts
  std::vector<int> concurrency = {1, 4, 8};
  int memory_conversations = 16;
  int memory_turns = 4;
  int image_size = 448;
  int server_pid = 0;  // 0: read resident memory from /metrics
  double request_timeout_seconds = 900;
  double ready_timeout_seconds = 600;
  bool warmup = true;
  bool json = false;
};

// What every scenario needs: the client, the model id and fresh images.
class LoadContext {
 public:
  LoadContext(const LoadtestOptions& options, std::string model_id);

  const LoadtestOptions& options() const { return options_; }
  const ChatStreamClient& client() const { return client_; }

  // A data: URI of a drawn image that no earlier request of any run has sent (a random stamp in
  // its pixels), so a server-side image cache starts cold for it.
  std::string fresh_image_uri() const;

  // A streamed, greedy chat body with usage reporting.
  nlohmann::json chat_body(nlohmann::json messages, int max_tokens) const;

 private:
  LoadtestOptions options_;
  ChatStreamClient client_;
  std::string model_id_;
  uint64_t run_seed_;
  mutable std::atomic<uint64_t> images_made_{0};
};

nlohmann::json user_message(const std::string& text, const std::string& image_uri = "");
nlohmann::json assistant_message(const std::string& text);

// A question of about 20 tokens about the picture, different for each index.
std::string follow_up_question(int index);
// A text prompt that draws out a long answer, different for each index (so no two streams
// share a cached prompt).
std::string long_answer_prompt(int index);

// Checks one response: counts its status and returns true if it is usable. A refusal (429/503)
// is a note when refusals_ok, else a failure; anything else non-2xx is a failure.
bool check_response(ScenarioResult& result, const ChatStreamResult& response,
                    const std::string& what, bool refusals_ok = false);

ScenarioResult run_conversation(const LoadContext& context);
ScenarioResult run_same_image(const LoadContext& context);
ScenarioResult run_interference(const LoadContext& context);
ScenarioResult run_concurrency(const LoadContext& context);
ScenarioResult run_memory(const LoadContext& context);

}  // namespace qvl::cli
