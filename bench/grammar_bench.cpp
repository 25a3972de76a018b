// Time to compute one step's token mask over the Qwen vocabulary (151,669 tokens from the test
// tokenizer) in typical states of a structured answer, plus applying it to 151,936 logits. The
// decode step it is compared with is `qvl bench`'s (or `qvl run --json`'s decode_ms per token).
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <random>

#include "engine/output_constraint.h"
#include "grammar/matcher.h"
#include "grammar/schema_compiler.h"
#include "tokenizer/tokenizer.h"

namespace {

constexpr int64_t kModelVocab = 151936;

const std::shared_ptr<const qvl::ConstraintVocabulary>& vocabulary() {
  static const auto v = std::make_shared<const qvl::ConstraintVocabulary>(
      qvl::Tokenizer::from_model_dir(QVL_TESTDATA_DIR "/qwen3vl-tiny-a"), kModelVocab);
  return v;
}

const char* const kSchema = R"({"type":"object","properties":{
  "name":{"type":"string"},"age":{"type":"integer"},"city":{"enum":["Paris","Berlin","Rome"]},
  "born":{"type":"string","format":"date"},
  "tags":{"type":"array","items":{"type":"string"}}},"required":["name","age","tags"]})";

// The argument picks the prefix the answer has so far.
const char* const kPrefixes[] = {
    "{",                                              // 0: before the first key
    "{\"name\": \"Ada Lov",                           // 1: inside free string content
    "{\"name\": \"Ada\", \"age\": ",                  // 2: a value (integer) starts
    "{\"name\": \"Ada\", \"age\": 36, \"ci",          // 3: inside a key
    "{\"name\": \"Ada\", \"age\": 36, \"city\": \"",  // 4: inside an enum
    "{\n  \"name\": \"Ada\",\n  ",                    // 5: inside a whitespace run
};

void BM_TokenMask(benchmark::State& state) {
  auto grammar = qvl::grammar::compile_json_schema(nlohmann::ordered_json::parse(kSchema));
  qvl::grammar::Matcher matcher(grammar);
  if (!matcher.advance(kPrefixes[state.range(0)])) state.SkipWithError("prefix rejected");
  std::vector<uint64_t> bits;
  matcher.allowed_tokens(vocabulary()->trie(), 1000, bits);  // the trie is built once, not timed
  for (auto _ : state) {
    matcher.allowed_tokens(vocabulary()->trie(), 1000, bits);
    benchmark::DoNotOptimize(bits.data());
  }
}
BENCHMARK(BM_TokenMask)->DenseRange(0, 5)->Unit(benchmark::kMicrosecond);

// What the engine adds per step at the start of an answer: the mask, and -inf written to the
// 151,936 logits it excludes (every token but those starting with '{').
void BM_MaskLogits(benchmark::State& state) {
  auto grammar = qvl::grammar::compile_json_schema(nlohmann::ordered_json::parse(kSchema));
  qvl::TokenConstraint constraint(grammar, vocabulary(), {151645});
  std::vector<float> logits(kModelVocab, 0.5f);
  for (auto _ : state) {
    constraint.mask(logits.data(), kModelVocab, 1000);
    benchmark::DoNotOptimize(logits.data());
  }
}
BENCHMARK(BM_MaskLogits)->Unit(benchmark::kMicrosecond);

}  // namespace
