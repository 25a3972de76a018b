// Unit tests of the server's building blocks: SSE/response format, admission, access, metrics.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "server/access.h"
#include "server/admission.h"
#include "server/metrics.h"
#include "server/openai_format.h"

namespace qvl::server {
namespace {

using nlohmann::json;

TEST(OpenAiFormat, CompletionObject) {
  GenerationResult result;
  result.text = "héllo";
  result.finish = FinishReason::kLength;
  result.stats.prompt_tokens = 10;
  result.stats.completion_tokens = 3;
  result.stats.decode_ms = 20;
  const CompletionIdentity id = new_completion_identity("tiny");
  const json body = completion_json(id, result);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "héllo");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["total_tokens"], 13);
  EXPECT_DOUBLE_EQ(body["timings"]["completion_tokens_per_second"].get<double>(), 100.0);
  EXPECT_NE(new_completion_identity("tiny").id, id.id);
}

TEST(OpenAiFormat, ChunksAndSse) {
  const CompletionIdentity id{"chatcmpl-x", 123, "tiny"};
  const json first = chunk_json(id, {{"role", "assistant"}, {"content", ""}}, nullptr, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(first.contains("usage"));
  EXPECT_TRUE(first["usage"].is_null());
  EXPECT_FALSE(chunk_json(id, json::object(), "stop", false).contains("usage"));
  GenerationStats stats;
  stats.prompt_tokens = 4;
  const json usage = usage_chunk_json(id, stats);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  // Invalid UTF-8 never breaks the stream.
  EXPECT_NE(sse_event(json{{"a", std::string("\xff")}}).find("data: "), std::string::npos);
}

TEST(Admission, ParallelThenQueueThenFull) {
  Admission admission(1, 1);
  Admission::Slot first;
  ASSERT_EQ(admission.enter(first, {}), Admission::Outcome::kAdmitted);
  EXPECT_EQ(admission.active(), 1);
  std::atomic<bool> second_admitted{false};
  std::thread waiter([&] {
    Admission::Slot second;
    EXPECT_EQ(admission.enter(second, {}, std::chrono::milliseconds(5)),
              Admission::Outcome::kAdmitted);
    second_admitted = true;
  });
  while (admission.queued() == 0) std::this_thread::yield();
  Admission::Slot third;
  EXPECT_EQ(admission.enter(third, {}), Admission::Outcome::kQueueFull);
  EXPECT_FALSE(second_admitted.load());
  first.release();
  waiter.join();
  EXPECT_TRUE(second_admitted.load());
  EXPECT_EQ(admission.active(), 0);
  EXPECT_EQ(admission.queued(), 0);
}

TEST(Admission, GivingUpLeavesTheQueue) {
  Admission admission(1, 4);
  Admission::Slot first;
  ASSERT_EQ(admission.enter(first, {}), Admission::Outcome::kAdmitted);
  Admission::Slot second;
  int asked = 0;
  EXPECT_EQ(admission.enter(
                second, [&] { return ++asked < 3; }, std::chrono::milliseconds(1)),
            Admission::Outcome::kGaveUp);
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(admission.queued(), 0);
  EXPECT_FALSE(static_cast<bool>(second));
}

TEST(Admission, TryEnterTakesOnlyAFreeSlotNobodyWaitsFor) {
  Admission admission(2, 4);
  Admission::Slot first, extra;
  ASSERT_EQ(admission.enter(first, {}), Admission::Outcome::kAdmitted);
  EXPECT_TRUE(admission.try_enter(extra));
  EXPECT_EQ(admission.active(), 2);
  Admission::Slot none;
  EXPECT_FALSE(admission.try_enter(none));  // both slots taken
  EXPECT_FALSE(static_cast<bool>(none));
  // The waiter holds its slot until told, so that whether it is still queued or already admitted
  // when try_enter runs, the slot is not free (it used to leave at once, freeing it).
  std::promise<void> done_checking;
  std::thread waiter([&, done = done_checking.get_future()] {
    Admission::Slot queued;
    EXPECT_EQ(admission.enter(queued, {}, std::chrono::milliseconds(5)),
              Admission::Outcome::kAdmitted);
    done.wait();
  });
  while (admission.queued() == 0) std::this_thread::yield();
  // A slot frees while someone waits: the waiter gets it, try_enter does not jump the queue.
  extra.release();
  EXPECT_FALSE(admission.try_enter(none));
  done_checking.set_value();
  waiter.join();
  EXPECT_TRUE(admission.try_enter(none));
  EXPECT_EQ(admission.active(), 2);
}

TEST(Access, ApiKey) {
  EXPECT_TRUE(path_needs_api_key("/v1/chat/completions"));
  EXPECT_TRUE(path_needs_api_key("/v1/models"));
  EXPECT_TRUE(path_needs_api_key("/tokenize"));
  EXPECT_FALSE(path_needs_api_key("/health"));
  EXPECT_FALSE(path_needs_api_key("/metrics"));
  EXPECT_TRUE(authorization_allows("", ""));
  EXPECT_TRUE(authorization_allows("Bearer sk-1", "sk-1"));
  EXPECT_TRUE(authorization_allows("bearer sk-1", "sk-1"));
  EXPECT_FALSE(authorization_allows("Bearer sk-2", "sk-1"));
  EXPECT_FALSE(authorization_allows("Bearer sk-11", "sk-1"));
  EXPECT_FALSE(authorization_allows("sk-1", "sk-1"));
  EXPECT_FALSE(authorization_allows("", "sk-1"));
}

TEST(Access, Cors) {
  EXPECT_TRUE(cors_headers("", "http://a", false).empty());
  EXPECT_TRUE(cors_headers("http://a", "http://b", false).empty());
  const auto exact = cors_headers("http://a", "http://a", true);
  ASSERT_FALSE(exact.empty());
  EXPECT_EQ(exact[0].second, "http://a");
  EXPECT_GT(exact.size(), 3u);
  EXPECT_EQ(cors_headers("*", "http://z", false)[0].second, "*");
}

TEST(Metrics, RendersPrometheusText) {
  Metrics metrics;
  metrics.count_request("/v1/chat/completions", 200);
  metrics.count_request("/v1/chat/completions", 200);
  metrics.count_request("/v1/chat/completions", 429);
  metrics.add_tokens(10, 5, 4);
  metrics.observe_time_to_first_token(0.02);
  metrics.observe_request_latency(3);
  LiveGauges gauges;
  gauges.queue_depth = 2;
  gauges.active_requests = 1;
  const std::string text = metrics.render(gauges);
  EXPECT_NE(text.find("qvl_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("status=\"429\"} 1"), std::string::npos);
  EXPECT_NE(text.find("qvl_prompt_tokens_total 10"), std::string::npos);
  EXPECT_NE(text.find("qvl_completion_tokens_total 5"), std::string::npos);
  EXPECT_NE(text.find("qvl_time_to_first_token_seconds_bucket{le=\"0.01\"} 0"), std::string::npos);
  EXPECT_NE(text.find("qvl_time_to_first_token_seconds_bucket{le=\"0.025\"} 1"), std::string::npos);
  EXPECT_NE(text.find("qvl_request_duration_seconds_bucket{le=\"+Inf\"} 1"), std::string::npos);
  EXPECT_NE(text.find("qvl_queue_depth 2"), std::string::npos);
  EXPECT_NE(text.find("qvl_active_requests 1"), std::string::npos);
  EXPECT_NE(text.find("process_resident_memory_bytes "), std::string::npos);
  EXPECT_GT(process_resident_bytes(), 1u << 20);
}

}  // namespace
}  // namespace qvl::server
