// The pure pieces of `qvl loadtest`: SSE framing, stream chunks, percentiles, /metrics parsing
// and diffing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli/latency_stats.h"
#include "cli/loadtest_report.h"
#include "cli/prometheus_text.h"
#include "cli/sse_stream.h"
#include "cli/stream_chunk.h"

namespace qvl::cli {
namespace {

std::vector<std::string> events_of(const std::vector<std::string>& chunks) {
  SseParser parser;
  std::vector<std::string> events;
  for (const std::string& chunk : chunks) {
    parser.feed(chunk, [&](const std::string& data) { events.push_back(data); });
  }
  return events;
}

TEST(SseParser, SplitsEventsOnBlankLines) {
  EXPECT_EQ(events_of({"data: {\"a\":1}\n\ndata: [DONE]\n\n"}),
            (std::vector<std::string>{"{\"a\":1}", "[DONE]"}));
}

TEST(SseParser, EventsSurviveAnyChunkBoundary) {
  const std::string stream = "data: {\"x\":\"h\\u00e9\"}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\n";
  const std::vector<std::string> expected = {"{\"x\":\"h\\u00e9\"}", "[DONE]"};
  for (size_t split = 0; split <= stream.size(); ++split) {
    EXPECT_EQ(events_of({stream.substr(0, split), stream.substr(split)}), expected) << split;
  }
  std::vector<std::string> bytes;
  for (const char c : stream) bytes.emplace_back(1, c);
  EXPECT_EQ(events_of(bytes), expected);
}

TEST(SseParser, JoinsDataLinesAndSkipsOtherFields) {
  EXPECT_EQ(events_of({"event: message\nid: 7\ndata: one\ndata:two\nretry: 5\n\n"}),
            (std::vector<std::string>{"one\ntwo"}));
  // "\r" alone ends a line too; an event with no data is not delivered.
  EXPECT_EQ(events_of({"data: a\r\rid: 1\r\r"}), (std::vector<std::string>{"a"}));
}

TEST(SseParser, UnterminatedEventIsNotDelivered) {
  EXPECT_TRUE(events_of({"data: partial"}).empty());
  EXPECT_TRUE(events_of({"data: partial\n"}).empty());
}

std::string chunk(const std::string& content, int logprob_entries) {
  nlohmann::json choice = {{"index", 0}, {"delta", {{"content", content}}}};
  if (logprob_entries > 0) {
    nlohmann::json entries = nlohmann::json::array();
    for (int i = 0; i < logprob_entries; ++i) {
      entries.push_back({{"token", ""}, {"logprob", -0.5}, {"bytes", nlohmann::json::array()}});
    }
    choice["logprobs"] = {{"content", entries}};
  }
  return nlohmann::json{{"object", "chat.completion.chunk"}, {"choices", {choice}}}.dump();
}

TEST(StreamChunk, TokensWithoutTextAreTokenArrivals) {
  // A stream whose second and third tokens have no text (a random-weights model repeats such
  // ids): only their log-probabilities come. Timing text alone saw one gap of 3 s here.
  ChatStreamResult result;
  EXPECT_FALSE(read_stream_event(chunk("", 0), 0.5, result));  // the role chunk: no token
  EXPECT_TRUE(read_stream_event(chunk("Hello", 1), 1.0, result));
  EXPECT_FALSE(read_stream_event(chunk("", 1), 2.0, result));
  EXPECT_FALSE(read_stream_event(chunk("", 1), 3.0, result));
  EXPECT_FALSE(read_stream_event(chunk(" world", 1), 4.0, result));
  EXPECT_EQ(result.token_times, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(result.content_times, (std::vector<double>{1, 4}));
  EXPECT_EQ(result.textless_tokens, 2);
  EXPECT_EQ(result.first_content_at, 1.0);
  EXPECT_EQ(result.text, "Hello world");
  EXPECT_EQ(successive_gaps(result.token_times), (std::vector<double>{1, 1, 1}));
}

ChatStreamResult tokens_at(std::vector<double> times, std::vector<int64_t> counts = {}) {
  ChatStreamResult r;
  if (counts.empty()) counts.assign(times.size(), 1);
  r.token_times = std::move(times);
  r.token_counts = std::move(counts);
  return r;
}

TEST(StreamChunk, SteadyDecodeRateCountsOnlyWhileEveryStreamDecodes) {
  // Stream A decodes 1 token/s from t = 0; B's prompt ends at t = 10, then 2 tokens/s to t = 20.
  // While both decode (10, 20]: A's 10 tokens (one chunk of 2) and B's 20 = 30 tokens in 10 s.
  std::vector<double> a_times, b_times;
  std::vector<int64_t> a_counts;
  for (int t = 0; t <= 30; ++t) {
    if (t == 15) continue;  // t = 16 carries two tokens
    a_times.push_back(t);
    a_counts.push_back(t == 16 ? 2 : 1);
  }
  for (int k = 0; k <= 20; ++k) b_times.push_back(10 + 0.5 * k);
  const std::vector<ChatStreamResult> both = {tokens_at(a_times, a_counts), tokens_at(b_times)};
  EXPECT_DOUBLE_EQ(steady_decode_rate(both), 3.0);
  // One stream: its own tokens after the first.
  EXPECT_DOUBLE_EQ(steady_decode_rate({tokens_at(b_times)}), 2.0);
  // Streams that never decode together, or too briefly: no steady rate.
  EXPECT_TRUE(std::isnan(steady_decode_rate({tokens_at({0, 1, 2}), tokens_at({5, 6, 7})})));
  EXPECT_TRUE(std::isnan(steady_decode_rate({tokens_at({0, 1, 2, 3}), tokens_at({2, 3, 4})})));
  EXPECT_TRUE(std::isnan(steady_decode_rate({tokens_at({}), tokens_at({1, 2})})));
}

TEST(StreamChunk, UsageFinishAndErrors) {
  ChatStreamResult result;
  read_stream_event(R"({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]})", 1, result);
  read_stream_event(R"({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,)"
                    R"("prompt_tokens_details":{"cached_tokens":4}},"timings":{"a":1}})",
                    2, result);
  EXPECT_EQ(result.finish_reason, "length");
  EXPECT_EQ(result.prompt_tokens, 7);
  EXPECT_EQ(result.completion_tokens, 3);
  EXPECT_EQ(result.cached_tokens, 4);
  EXPECT_EQ(result.timings["a"], 1);
  EXPECT_TRUE(result.token_times.empty());
  EXPECT_TRUE(result.error.empty());
  read_stream_event(R"({"error":{"message":"boom"}})", 3, result);
  EXPECT_EQ(result.error, "error event in the stream: boom");
  ChatStreamResult garbled;
  read_stream_event("not json", 1, garbled);
  EXPECT_NE(garbled.error.find("not JSON"), std::string::npos);
}

TEST(Percentile, InterpolatesBetweenRanks) {
  const std::vector<double> values = {4, 1, 3, 2};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(percentile(values, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(values, 100), 4);
  EXPECT_DOUBLE_EQ(percentile(values, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(values, 25), 1.75);
  EXPECT_DOUBLE_EQ(median({5}), 5);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
}

TEST(Percentile, P99OfManyGapsSeesTheOutlier) {
  std::vector<double> gaps(99, 0.1);
  gaps.push_back(2.0);
  const LatencySummary s = summarize(gaps);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.median, 0.1);
  EXPECT_NEAR(s.p99, 0.1 + 0.01 * 1.9, 1e-12);  // rank 98.01: 1% of the way to the outlier
  EXPECT_DOUBLE_EQ(s.max, 2.0);
}

TEST(SuccessiveGaps, DifferencesOfNeighbours) {
  EXPECT_EQ(successive_gaps({1, 1.5, 3}), (std::vector<double>{0.5, 1.5}));
  EXPECT_TRUE(successive_gaps({1}).empty());
}

TEST(PrometheusText, ReadsSamplesWithLabels) {
  const auto samples = parse_prometheus_text(
      "# HELP qvl_requests_total HTTP requests.\n"
      "# TYPE qvl_requests_total counter\n"
      "qvl_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 3\n"
      "qvl_label_with_space{name=\"a b}\\\"c\"} 1.5 1700000000\r\n"
      "process_resident_memory_bytes 1.2e+09\n"
      "qvl_ratio NaN\n"
      "broken_line_without_value\n"
      "qvl_bad_value abc\n");
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples.at("qvl_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"}"), 3);
  EXPECT_EQ(samples.at("qvl_label_with_space{name=\"a b}\\\"c\"}"), 1.5);
  EXPECT_EQ(samples.at("process_resident_memory_bytes"), 1.2e9);
  EXPECT_TRUE(std::isnan(samples.at("qvl_ratio")));
}

TEST(PrometheusText, ChangedSamplesKeepPrefixAndSkipBuckets) {
  const auto before = parse_prometheus_text(
      "qvl_tokens_total 10\nqvl_same 1\nqvl_nan NaN\nqvl_ttft_bucket{le=\"1\"} 0\n"
      "qvl_ttft_count 0\nprocess_cpu_seconds_total 1\n");
  const auto after = parse_prometheus_text(
      "qvl_tokens_total 25\nqvl_same 1\nqvl_nan NaN\nqvl_ttft_bucket{le=\"1\"} 2\n"
      "qvl_ttft_count 2\nprocess_cpu_seconds_total 3\nqvl_new_cache_hits 4\n");
  const auto changes = changed_samples(before, after, "qvl_");
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].sample, "qvl_new_cache_hits");
  EXPECT_EQ(changes[0].before, 0);
  EXPECT_EQ(changes[0].after, 4);
  EXPECT_EQ(changes[1].sample, "qvl_tokens_total");
  EXPECT_EQ(changes[1].before, 10);
  EXPECT_EQ(changes[1].after, 25);
  EXPECT_EQ(changes[2].sample, "qvl_ttft_count");
}

TEST(ScenarioResult, PassesOnlyWithEveryTargetMetAndNoFailure) {
  ScenarioResult result("conversation");
  result.measure("ttft_ratio", "TTFT turn 2 / turn 1", 0.08);
  result.measure("speedup_4", "4 streams vs 1", 2.5);
  result.add_target("ttft_ratio", true, 0.10);
  EXPECT_TRUE(result.passed());
  result.add_target("speedup_4", false, 3.0);
  EXPECT_FALSE(result.passed());
  const nlohmann::json json = result.to_json();
  EXPECT_EQ(json["scenario"], "conversation");
  EXPECT_EQ(json["ttft_ratio"], 0.08);
  ASSERT_EQ(json["targets"].size(), 2u);
  EXPECT_EQ(json["targets"][0]["met"], true);
  EXPECT_EQ(json["targets"][1]["op"], ">=");
  EXPECT_EQ(json["targets"][1]["met"], false);
  EXPECT_EQ(json["pass"], false);

  ScenarioResult failed("same-image");
  failed.measure("ttft_ratio", "ratio", 0.1);
  failed.add_target("ttft_ratio", true, 0.5);
  failed.failures.push_back("HTTP 500");
  EXPECT_FALSE(failed.passed());
}

TEST(ScenarioResult, UnmeasuredTargetIsNotMet) {
  ScenarioResult result("interference");
  result.measure("gap_ratio_p99_median", "ratio", NAN);
  result.add_target("gap_ratio_p99_median", true, 2.5);
  result.add_target("never_measured", true, 1.0);
  EXPECT_FALSE(result.targets[0].met());
  EXPECT_FALSE(result.targets[1].met());
  EXPECT_FALSE(result.numbers.contains("never_measured"));
  // NaN is written as null: the JSON stays valid.
  EXPECT_NE(result.to_json().dump().find("\"gap_ratio_p99_median\":null"), std::string::npos);
  const std::string table = format_table({result});
  EXPECT_NE(table.find("n/a"), std::string::npos);
  EXPECT_NE(table.find("FAIL"), std::string::npos);
}

}  // namespace
}  // namespace qvl::cli
