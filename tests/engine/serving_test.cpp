// The serving engine through the public API on the tiny model: continuous batching keeps every
// answer equal to the one given alone (batch invariance), prefix and image caches reuse work and
// keep the answer, cancellation and the KV budget behave.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <thread>

#include "base/error.h"
#include "base/mapped_file.h"
#include "model/model_presets.h"
#include "model/safetensors_writer.h"
#include "qvl/engine.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

std::unique_ptr<Engine> load(const std::string& quant, int64_t kv_cache_mb = 0,
                             const std::string& dir = kTiny) {
  EngineOptions o;
  o.model_dir = dir;
  o.quant = quant;
  o.kv_cache_mb = kv_cache_mb;
  return Engine::load(o);
}

std::vector<uint8_t> image_file(const std::string& name) {
  const MappedFile f(kTiny + "/images/" + name);
  return {f.data(), f.data() + f.size()};
}

GenerationRequest chat(const std::string& text, int64_t max_tokens, const std::string& image = "") {
  GenerationRequest r;
  Message m{"user", true, {{ContentPart::Kind::kText, text, -1}}};
  if (!image.empty()) {
    m.content_is_string = false;
    m.parts.insert(m.parts.begin(), {ContentPart::Kind::kImage, "", 0});
    r.images.push_back({image_file(image), 0, 0});
  }
  r.messages.push_back(m);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

// Eight different requests: text and images, greedy and seeded sampling.
std::vector<GenerationRequest> eight_requests() {
  std::vector<GenerationRequest> out;
  // Prompts are long enough that whatever a request may reuse of another's pages (the chat
  // template's first tokens) leaves 16 or more rows to compute: the prefill then takes the same
  // GEMM path as a cold start, so the comparison is exact.
  const char* prompts[] = {"Describe a sunny day in three words, please.",
                           "List four colours of the rainbow in order.",
                           "What is the capital of France? Answer briefly.",
                           "Write one sentence about the sea and its waves.",
                           "Count from one to five in words.",
                           "Name a fruit that is yellow and curved."};
  for (const char* p : prompts) {
    out.push_back(chat(std::string(p) + " Take your time, think about it carefully, and then "
                                        "give the answer in plain English.",
                       20));
  }
  out.push_back(chat("What shapes are in this picture?", 20, "a_iv_shapes_256x200.png"));
  out.push_back(chat("Describe the scene in this photo.", 20, "a_iii_scene_640x480.jpg"));
  out[1].sampling.temperature = 0.8f;
  out[1].sampling.seed = 5;
  out[6].sampling.temperature = 0.7f;
  out[6].sampling.top_p = 0.9f;
  out[6].sampling.seed = 9;
  return out;
}

std::vector<GenerationResult> run_together(Engine& engine,
                                           const std::vector<GenerationRequest>& requests) {
  std::vector<GenerationResult> results(requests.size());
  std::vector<std::exception_ptr> errors(requests.size());
  std::vector<std::thread> threads;
  std::latch start(static_cast<std::ptrdiff_t>(requests.size()));  // submit together
  for (size_t i = 0; i < requests.size(); ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        results[i] = engine.generate(requests[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

// Every request answered in one batch gives the answer it gives alone, for each weight type.
void expect_batched_answers_equal_alone_ones(const std::string& dir,
                                             const std::vector<std::string>& quants) {
  const auto requests = eight_requests();
  for (const std::string& quant : quants) {
    SCOPED_TRACE(quant);
    const auto alone_engine = load(quant, 0, dir);
    std::vector<GenerationResult> alone;
    for (const auto& r : requests) alone.push_back(alone_engine->generate(r));
    const auto batched_engine = load(quant, 0, dir);
    const auto batched = run_together(*batched_engine, requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(batched[i].prompt_ids, alone[i].prompt_ids);
      EXPECT_EQ(batched[i].completion_ids, alone[i].completion_ids);
      EXPECT_EQ(batched[i].text, alone[i].text);
      EXPECT_EQ(batched[i].completion_ids.size(), 20u);
    }
    // They really ran together: some step advanced more than one request.
    const EngineStats s = batched_engine->stats();
    uint64_t multi = 0;
    for (size_t b = 1; b < s.batch_size_counts.size(); ++b) multi += s.batch_size_counts[b];
    EXPECT_GT(multi, 0u);
  }
}

TEST(Serving, BatchedAnswersAreIdenticalToAloneAnswers) {
  expect_batched_answers_equal_alone_ones(kTiny, {"bf16", "q8", "q4"});  // exact: parity tests
}

// gen-model's tiny-moe weights (8 experts, 2 active, one dense layer) beside tiny-a's tokenizer,
// processor and chat template.
std::string tiny_moe_folder() {
  const std::string dir =
      ::testing::TempDir() + "/qvl_serving_tiny_moe_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* f : {"tokenizer_config.json", "chat_template.json", "preprocessor_config.json",
                        "generation_config.json"}) {
    std::filesystem::create_symlink(std::filesystem::canonical(kTiny + "/" + f), dir + "/" + f);
  }
  // tiny-a's tokenizer.json names the shared one relative to its folder.
  std::filesystem::create_symlink(
      std::filesystem::canonical(std::string(QVL_TESTDATA_DIR) + "/qwen3-tokenizer/tokenizer.json"),
      dir + "/tokenizer.json");
  std::ofstream(dir + "/config.json") << preset_config_json("tiny-moe").dump(2);
  write_safetensors(dir + "/model.safetensors", preset_tensors("tiny-moe", 3));
  return dir;
}

TEST(Serving, BatchedAnswersAreIdenticalToAloneAnswersWithExperts) {
  // A decode step's rows share each expert's products (and prompt chunks group their own tokens
  // by expert): a row's experts and bits must not depend on the others.
  const std::string dir = tiny_moe_folder();
  expect_batched_answers_equal_alone_ones(dir, {"bf16", "q4"});
  std::filesystem::remove_all(dir);
}

TEST(Serving, SecondTurnReusesThePrefixAndTheImageAndAnswersAsACold) {
  for (const std::string quant : {"exact", "q8"}) {
    SCOPED_TRACE(quant);
    const auto engine = load(quant);
    GenerationRequest turn1 =
        chat("What shapes are in this picture?", 12, "a_iv_shapes_256x200.png");
    const GenerationResult r1 = engine->generate(turn1);
    EXPECT_EQ(r1.stats.cached_tokens, 0);
    GenerationRequest turn2 = turn1;
    turn2.messages.push_back({"assistant", true, {{ContentPart::Kind::kText, r1.text, -1}}});
    turn2.messages.push_back(
        {"user", true, {{ContentPart::Kind::kText, "And which colour is the largest one?", -1}}});
    const GenerationResult warm = engine->generate(turn2);
    // Everything turn 1 computed that turn 2 starts with comes from the cache: at least turn 1's
    // prompt up to its last position (whose "\n" may merge with the answer's first characters
    // when the conversation is tokenized again).
    EXPECT_GE(warm.stats.cached_tokens, r1.stats.prompt_tokens - 1);
    const EngineStats s = engine->stats();
    EXPECT_EQ(s.image_cache_hits, 1u);
    EXPECT_EQ(s.image_cache_misses, 1u);
    EXPECT_GE(s.prefix_hit_tokens, static_cast<uint64_t>(warm.stats.cached_tokens));
    // The same answer as a fresh engine computing everything.
    const GenerationResult cold = load(quant)->generate(turn2);
    EXPECT_EQ(cold.stats.cached_tokens, 0);
    EXPECT_EQ(warm.prompt_ids, cold.prompt_ids);
    EXPECT_EQ(warm.completion_ids, cold.completion_ids);
    // The same request again reuses all but its last prompt position.
    const GenerationResult again = engine->generate(turn2);
    EXPECT_EQ(again.stats.cached_tokens, again.stats.prompt_tokens - 1);
    EXPECT_EQ(again.completion_ids, cold.completion_ids);
  }
}

TEST(Serving, CancellingOneRequestLeavesTheOthersRunning) {
  const auto engine = load("q8");
  std::vector<GenerationResult> results(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      int pieces = 0;
      GenerationRequest r = chat("Tell me a long story about request " + std::to_string(i), 60);
      results[i] = engine->generate(r, [&](const std::string&) { return i != 1 || ++pieces < 3; });
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(results[1].finish, FinishReason::kCancelled);
  EXPECT_LT(results[1].completion_ids.size(), 60u);
  for (int i : {0, 2}) {
    EXPECT_EQ(results[i].finish, FinishReason::kLength);
    EXPECT_EQ(results[i].completion_ids.size(), 60u);
  }
  // The cancelled flag works too, and nothing stays held.
  std::atomic<bool> cancel{true};
  const GenerationResult c = engine->generate(chat("Hello there", 30), {}, &cancel);
  EXPECT_EQ(c.finish, FinishReason::kCancelled);
  EXPECT_EQ(engine->stats().kv_pages_used, 0);
}

TEST(Serving, KVBudgetQueuesRequestsAndRefusesOnesThatCanNeverFit) {
  const auto engine = load("q8", /*kv_cache_mb=*/1);  // tiny model: 16 pages of 128 positions
  const EngineStats s = engine->stats();
  ASSERT_EQ(s.kv_pages_total * s.kv_page_tokens, 2048);
  // A prompt longer than the whole cache is refused with a clear message.
  std::string long_text;
  for (int i = 0; i < 700; ++i) long_text += "one two three ";
  try {
    engine->generate(chat(long_text, 4));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(std::string(e.what()).find("--kv-cache-mb"), std::string::npos) << e.what();
  }
  // An answer allowed to outgrow the cache stops where the cache ends, as at max_tokens.
  const GenerationResult capped = engine->generate(chat("Hello", 4000));
  EXPECT_EQ(capped.finish, FinishReason::kLength);
  EXPECT_EQ(capped.stats.prompt_tokens + capped.stats.completion_tokens, 2048);
  // Six requests of ~600 positions each need more pages than there are: some wait, all finish.
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(chat("Story number " + std::to_string(i), 580));
  const auto results = run_together(*engine, requests);
  for (const auto& r : results) EXPECT_EQ(r.completion_ids.size(), 580u);
  const EngineStats after = engine->stats();
  EXPECT_EQ(after.kv_pages_used, 0);
  uint64_t waited = 0;  // queue waits above 1 ms
  for (size_t b = 1; b < after.queue_wait_counts.size(); ++b) waited += after.queue_wait_counts[b];
  EXPECT_GT(waited, 0u);
}

}  // namespace
}  // namespace qvl
