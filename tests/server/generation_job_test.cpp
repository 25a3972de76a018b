// GenerationJob between an engine thread and a streaming reader: with log-probabilities, a token
// leaves when its last callback (on_logprobs) comes, text and log-probability together, and a
// token without text leaves at once instead of with the next text. The fake engine stops at gates
// the test opens, so every step is ordered without sleeps.
#include "server/generation_job.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <utility>

namespace qvl::server {
namespace {

using namespace std::chrono_literals;

GeneratedTokenLogprobs token(int64_t id, std::string bytes) {
  GeneratedTokenLogprobs t;
  t.token = {id, -0.25, std::move(bytes)};
  return t;
}

// Emits "Hello" (text, then its log-probability), waits at gate 1, emits a token with no text
// (log-probability only), waits at gate 2, ends.
class GatedEngine : public Engine {
 public:
  const ModelInfo& info() const override { return info_; }
  GenerationResult generate(const GenerationRequest& request, const TextCallback& on_text,
                            const std::atomic<bool>*) override {
    on_text("Hello");
    request.on_logprobs(token(1, "Hello"));
    gate1.get_future().wait_for(120s);  // bounded: a failing test still ends
    request.on_logprobs(token(151689, ""));
    gate2.get_future().wait_for(120s);
    GenerationResult result;
    result.text = "Hello";
    result.completion_ids = {1, 151689};
    return result;
  }
  ScoreResult score(const GenerationRequest&, const std::vector<int64_t>&,
                    const LogitsCallback&) override {
    return {};
  }
  EngineStats stats() const override { return {}; }
  std::vector<int64_t> tokenize(const std::string&) const override { return {}; }
  std::string detokenize(const std::vector<int64_t>&) const override { return ""; }

  std::promise<void> gate1, gate2;
  bool gate1_open = false, gate2_open = false;
  void open_gate1() {
    if (!std::exchange(gate1_open, true)) gate1.set_value();
  }
  void open_gate2() {
    if (!std::exchange(gate2_open, true)) gate2.set_value();
  }

 private:
  ModelInfo info_;
};

TEST(GenerationJob, TokenWithoutTextLeavesAtOnceWithLogprobs) {
  GatedEngine engine;
  GenerationRequest request;
  request.top_logprobs = 0;
  GenerationJob job(engine, request);
  struct OpenGates {  // a failed assertion still lets the job end at once
    GatedEngine& engine;
    ~OpenGates() {
      engine.open_gate1();
      engine.open_gate2();
    }
  } open_gates{engine};

  // The first token: its text and its log-probability in one piece (the engine waits at gate 1).
  GenerationJob::Progress first = job.wait(60s);
  EXPECT_EQ(first.text, "Hello");
  ASSERT_EQ(first.logprobs.size(), 1u);
  EXPECT_EQ(first.logprobs[0].token.id, 1);
  EXPECT_FALSE(first.finished);

  // The second token has no text: the reader is woken for its log-probability, long before the
  // wait's timeout (which the old job waited out: it woke only for text).
  engine.open_gate1();
  const auto start = std::chrono::steady_clock::now();
  GenerationJob::Progress second = job.wait(60s);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 30.0);
  EXPECT_TRUE(second.text.empty());
  ASSERT_EQ(second.logprobs.size(), 1u);
  EXPECT_EQ(second.logprobs[0].token.id, 151689);
  EXPECT_FALSE(second.finished);

  engine.open_gate2();
  job.wait_finished();
  EXPECT_TRUE(job.wait(60s).finished);
  EXPECT_EQ(job.result().completion_ids.size(), 2u);
}

}  // namespace
}  // namespace qvl::server
