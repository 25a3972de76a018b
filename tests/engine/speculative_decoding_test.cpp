// Speculative decoding (prompt lookup and jump-forward) gives the same bits as plain decoding:
// the same tokens and log-probabilities, greedy and seeded sampling, constrained, with images,
// for every weight type and KV storage, alone and batched; and the drafts are really tried.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "base/mapped_file.h"
#include "engine/draft_tokens.h"
#include "engine/output_constraint.h"
#include "qvl/engine.h"
#include "tokenizer/tokenizer.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";
// 8B-shaped: query heads in groups of 4 (so fewer draft rows per attention block), head_dim 32
// (an 8-bit KV cache is possible).
const std::string kTinyB = std::string(QVL_GOLDEN_TINY_B_DIR);

std::vector<int64_t> lookup(const std::vector<int64_t>& prompt,
                            const std::vector<int64_t>& completion, int64_t max,
                            int64_t stop_id = -1) {
  std::vector<int64_t> draft;
  prompt_lookup_draft(
      prompt, completion, 2, 4, max, [&](int64_t id) { return id == stop_id; }, draft);
  return draft;
}

TEST(PromptLookupDraft, CopiesWhatFollowedTheLatestLongestMatch) {
  // Last 3 tokens "1 2 3" occur at 0 (followed by 9) and at 5 (followed by 7 8).
  EXPECT_EQ(lookup({1, 2, 3, 9, 4, 1, 2, 3, 7, 8}, {5, 1, 2, 3}, 2), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(lookup({1, 2, 3, 9, 4, 1, 2, 3, 7, 8}, {5, 1, 2, 3}, 1), (std::vector<int64_t>{7}));
  // A 4-gram match wins over a later 2-gram one.
  EXPECT_EQ(lookup({6, 1, 2, 3, 4, 50, 9, 3, 4, 60}, {1, 2, 3, 4}, 1), (std::vector<int64_t>{50}));
  // The match may be in the answer itself, and the draft may run into the answer's end.
  EXPECT_EQ(lookup({}, {8, 5, 6, 8, 5}, 4), (std::vector<int64_t>{6, 8, 5}));
  // Nothing to copy: no repeated bigram (a single repeated token is not enough).
  EXPECT_TRUE(lookup({1, 2, 3}, {4, 3}, 4).empty());
  EXPECT_TRUE(lookup({}, {}, 4).empty());
  EXPECT_TRUE(lookup({1, 2, 1, 2}, {}, 0).empty());
  // A stop token ends the draft.
  EXPECT_EQ(lookup({1, 2, 7, 99, 8}, {1, 2}, 4, 99), (std::vector<int64_t>{7}));
}

TEST(DraftPolicy, GrowsOnSuccessBacksOffOnFailureAndRetries) {
  DraftPolicy p;
  const int64_t first = p.cap(100);
  ASSERT_GE(first, 1);
  p.record(first, first, 10);
  EXPECT_EQ(p.cap(100), 2 * first);
  EXPECT_EQ(p.cap(3), 3);      // within the room
  p.record(2 * first, 1, 10);  // partial acceptance keeps the cap
  EXPECT_EQ(p.cap(100), 2 * first);
  // Failures halve it down to nothing: then plain steps, then one token again.
  for (int64_t c = 2 * first; c > 0; c /= 2) {
    EXPECT_EQ(p.cap(100), c);
    p.record(c, 0, 10);
  }
  for (int64_t i = 0; i < DraftPolicy::kFirstPause; ++i) EXPECT_EQ(p.cap(100), 0) << i;
  EXPECT_EQ(p.cap(100), 1);
  // Missing again pauses twice as long.
  p.record(1, 0, 10);
  for (int64_t i = 0; i < 2 * DraftPolicy::kFirstPause; ++i) EXPECT_EQ(p.cap(100), 0) << i;
  EXPECT_EQ(p.cap(100), 1);
}

TEST(DraftPolicy, StopsDraftingWhenItIsSlowerThanPlainSteps) {
  // Plain steps: 1 token in 10 ms. Drafted steps: 1 of 2 drafts taken, but the rows make the
  // step 25 ms: 2 tokens in 25 ms is slower.
  DraftPolicy slow;
  slow.record(0, 0, 10);
  int64_t steps = 0;
  while (slow.cap(100) > 0 && steps < 100) {
    slow.record(2, 1, 25);
    ++steps;
  }
  EXPECT_EQ(steps, 4);  // the first comparison
  // The same acceptance in 12 ms steps pays: drafting goes on.
  DraftPolicy fast;
  fast.record(0, 0, 10);
  for (int i = 0; i < 50; ++i) {
    ASSERT_GT(fast.cap(100), 0) << i;
    fast.record(2, 1, 12);
  }
}

TEST(ForcedDraft, SpellsTheSchemaForcedTextAndStopsAtAChoice) {
  const Tokenizer tokenizer = Tokenizer::from_model_dir(kTiny);
  GenerationRequest request;
  request.constraint.kind = OutputConstraint::Kind::kJsonSchema;
  request.constraint.json_schema =
      R"({"type":"object","properties":{"invoice_number":{"type":"string"}},)"
      R"("required":["invoice_number"],"additionalProperties":false})";
  const auto vocabulary = std::make_shared<ConstraintVocabulary>(tokenizer, tokenizer.vocab_size());
  TokenConstraint constraint(compile_output_constraint(request), vocabulary, {});
  // After the opening brace and quote, the only key is forced up to its closing quote at least.
  for (int32_t id : tokenizer.encode("{\"")) constraint.accept(id);
  std::vector<int64_t> draft;
  constraint.forced_draft(tokenizer, 16, draft);
  ASSERT_FALSE(draft.empty());
  std::vector<int32_t> ids(draft.begin(), draft.end());
  const std::string text = tokenizer.decode(ids);
  EXPECT_EQ(text.rfind("invoice_number\"", 0), 0u) << text;
  // Within the budget of tokens.
  draft.clear();
  constraint.forced_draft(tokenizer, 1, draft);
  EXPECT_EQ(draft.size(), 1u);
  // Inside the free string value nothing is forced.
  for (int32_t id : tokenizer.encode("invoice_number\": \"A")) constraint.accept(id);
  draft.clear();
  constraint.forced_draft(tokenizer, 16, draft);
  EXPECT_TRUE(draft.empty());
}

// The greedy shortcut (scheduler): allows() says yes exactly when the mask keeps a token.
TEST(ConstraintAllows, AgreesWithTheMaskAtEveryStep) {
  const Tokenizer tokenizer = Tokenizer::from_model_dir(kTiny);
  GenerationRequest request;
  request.constraint.kind = OutputConstraint::Kind::kJsonSchema;
  request.constraint.json_schema =
      R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"},)"
      R"("tags":{"type":"array","items":{"type":"string","enum":["red","green"]}}},)"
      R"("required":["name","n","tags"],"additionalProperties":false})";
  const int64_t vocab = tokenizer.vocab_size();
  const int64_t end_id = tokenizer.token_id_or_throw("<|im_end|>");
  const auto vocabulary = std::make_shared<ConstraintVocabulary>(tokenizer, vocab);
  TokenConstraint constraint(compile_output_constraint(request), vocabulary, {end_id});
  const std::string answer = R"({"name": "Zoë \"Q\"", "n": -12, "tags": ["red", "green"]})";
  std::vector<float> logits(static_cast<size_t>(vocab));
  const std::vector<int32_t> ids = tokenizer.encode(answer);
  int64_t checked = 0;
  for (size_t step = 0; step <= ids.size(); ++step) {
    // Budgets: plenty, and tight (the distance rule).
    for (const int64_t left : {int64_t{1000}, int64_t{3}}) {
      std::fill(logits.begin(), logits.end(), 0.0f);
      constraint.mask(logits.data(), vocab, left);
      for (int64_t t = 0; t < vocab; ++t) {
        if (t % 5 != 0 && logits[static_cast<size_t>(t)] != 0.0f && t != end_id) continue;
        const bool masked_in = logits[static_cast<size_t>(t)] == 0.0f;
        if (left > 100) {
          EXPECT_EQ(constraint.allows(t, left), masked_in)
              << "token " << t << " after " << step << " tokens";
        } else if (constraint.allows(t, left)) {
          // Tight: when nothing can finish in time the mask drops the limit; allows() never
          // does (a "no" only costs the mask), but a "yes" must be the mask's too.
          EXPECT_TRUE(masked_in) << "token " << t << " after " << step << " tokens, budget 3";
        }
        ++checked;
      }
    }
    if (step < ids.size()) constraint.accept(ids[step]);
  }
  EXPECT_GT(checked, 100000);
}

std::unique_ptr<Engine> load(const std::string& quant, int64_t draft_tokens,
                             const std::string& kv_type = "", bool prompt_lookup = true,
                             const std::string& model = kTiny) {
  EngineOptions o;
  o.model_dir = model;
  o.quant = quant;
  o.kv_type = kv_type;
  o.speculative.draft_tokens = draft_tokens;
  o.speculative.prompt_lookup = prompt_lookup;
  return Engine::load(o);
}

GenerationRequest chat(const std::string& text, int64_t max_tokens) {
  GenerationRequest r;
  r.messages.push_back({"user", true, {{ContentPart::Kind::kText, text, -1}}});
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  r.top_logprobs = 2;
  return r;
}

std::vector<GenerationRequest> requests() {
  std::vector<GenerationRequest> out;
  // Text to copy from: a random model's answers loop, and loops are what prompt lookup finds.
  out.push_back(
      chat("Copy this line exactly: the quick brown fox jumps over the lazy dog, "
           "the quick brown fox jumps over the lazy dog.",
           40));
  GenerationRequest sampled = chat("Write the alphabet: a b c d e f g h i j k l m n o p.", 40);
  sampled.sampling.temperature = 0.9f;
  sampled.sampling.top_k = 20;
  sampled.sampling.repetition_penalty = 1.1f;
  sampled.sampling.seed = 7;
  out.push_back(sampled);
  GenerationRequest image = chat("Read the text in this picture.", 30);
  image.messages[0].content_is_string = false;
  image.messages[0].parts.insert(image.messages[0].parts.begin(),
                                 {ContentPart::Kind::kImage, "", 0});
  const MappedFile png(kTiny + "/images/a_iv_shapes_256x200.png");
  image.images.push_back({std::vector<uint8_t>(png.data(), png.data() + png.size()), 0, 0});
  out.push_back(image);
  GenerationRequest json = chat("The receipt: Coffee 3.50, Bagel 2.25. Total 5.75. As JSON.", 60);
  json.constraint.kind = OutputConstraint::Kind::kJsonSchema;
  json.constraint.json_schema =
      R"({"type":"object","properties":{"merchant_name":{"type":"string"},)"
      R"("total_amount":{"type":"number"},"line_items":{"type":"array","items":)"
      R"({"type":"object","properties":{"description":{"type":"string"},)"
      R"("price":{"type":"number"}},"required":["description","price"]}}},)"
      R"("required":["merchant_name","total_amount","line_items"]})";
  json.sampling.ignore_eos = false;
  out.push_back(json);
  return out;
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void expect_same(const GenerationResult& plain, const GenerationResult& fast, const char* what) {
  EXPECT_EQ(fast.prompt_ids, plain.prompt_ids) << what;
  EXPECT_EQ(fast.completion_ids, plain.completion_ids) << what;
  EXPECT_EQ(fast.text, plain.text) << what;
  EXPECT_EQ(fast.finish, plain.finish) << what;
  ASSERT_EQ(fast.logprobs.size(), plain.logprobs.size()) << what;
  for (size_t i = 0; i < plain.logprobs.size(); ++i) {
    EXPECT_TRUE(same_bits(fast.logprobs[i].token.logprob, plain.logprobs[i].token.logprob))
        << what << " token " << i;
    ASSERT_EQ(fast.logprobs[i].top.size(), plain.logprobs[i].top.size());
    for (size_t k = 0; k < plain.logprobs[i].top.size(); ++k) {
      EXPECT_EQ(fast.logprobs[i].top[k].id, plain.logprobs[i].top[k].id) << what;
      EXPECT_TRUE(same_bits(fast.logprobs[i].top[k].logprob, plain.logprobs[i].top[k].logprob))
          << what << " token " << i;
    }
  }
}

struct Case {
  std::string quant, kv_type;
  std::string model = kTiny;
};

class SpeculativeDecoding : public ::testing::TestWithParam<Case> {};

TEST_P(SpeculativeDecoding, SameBitsAsPlainDecodingAndDraftsAreAccepted) {
  const Case& c = GetParam();
  const auto plain = load(c.quant, 0, c.kv_type, true, c.model);
  const auto fast = load(c.quant, 7, c.kv_type, true, c.model);
  int64_t drafted = 0, accepted = 0;
  const char* names[] = {"greedy", "sampled", "image", "json"};
  const std::vector<GenerationRequest> all = requests();
  for (size_t i = 0; i < all.size(); ++i) {
    const GenerationResult a = plain->generate(all[i]);
    const GenerationResult b = fast->generate(all[i]);
    EXPECT_EQ(a.stats.draft_tokens, 0);
    expect_same(a, b, names[i]);
    EXPECT_LE(b.stats.draft_accepted_tokens, b.stats.draft_tokens);
    drafted += b.stats.draft_tokens;
    accepted += b.stats.draft_accepted_tokens;
  }
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, 0);  // rows past the first really were used
}

INSTANTIATE_TEST_SUITE_P(WeightsAndKV, SpeculativeDecoding,
                         ::testing::Values(Case{"exact", ""}, Case{"bf16", ""}, Case{"q8", ""},
                                           Case{"q4", ""}, Case{"exact", "", kTinyB},
                                           Case{"bf16", "", kTinyB}, Case{"q4", "q8", kTinyB}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return (c.model == kTiny ? "a_" : "b_") + c.quant +
                                  (c.kv_type.empty() ? "" : "_kv_" + c.kv_type);
                         });

TEST(SpeculativeDecodingBatched, TogetherWithDraftsEqualsAloneWithout) {
  const auto plain = load("q8", 0);
  const auto fast = load("q8", 7);
  const std::vector<GenerationRequest> all = requests();
  std::vector<GenerationResult> together(all.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < all.size(); ++i) {
    threads.emplace_back([&, i] { together[i] = fast->generate(all[i]); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < all.size(); ++i)
    expect_same(plain->generate(all[i]), together[i], "batched");
}

TEST(ConstrainedGreedy, SkippingTheMaskForAnAllowedChoiceKeepsTheAnswer) {
  // With log-probabilities every step is masked; without, only steps whose first choice the
  // grammar forbids. Drafts off and on.
  for (const int64_t drafts : {int64_t{0}, int64_t{7}}) {
    const auto engine = load("q8", drafts);
    GenerationRequest masked = requests().back();
    GenerationRequest quick = masked;
    quick.top_logprobs = -1;
    const GenerationResult a = engine->generate(masked);
    const GenerationResult b = engine->generate(quick);
    EXPECT_EQ(b.completion_ids, a.completion_ids) << drafts;
    EXPECT_EQ(b.text, a.text) << drafts;
  }
}

TEST(SpeculativeDecodingJumpForward, ForcedTextIsDraftedWithoutPromptLookup) {
  const auto plain = load("q8", 0);
  const auto forced = load("q8", 7, "", /*prompt_lookup=*/false);
  const GenerationRequest json = requests().back();
  const GenerationResult a = plain->generate(json);
  const GenerationResult b = forced->generate(json);
  expect_same(a, b, "json");
  EXPECT_GT(b.stats.draft_tokens, 0);
}

}  // namespace
}  // namespace qvl
