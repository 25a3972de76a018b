// The token mask over the real Qwen vocabulary: it equals a brute-force check of every token,
// and random walks over allowed tokens (uniform, the worst case for long strings) always reach a
// complete, valid answer within their token budget: the grammar never dead-ends.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "grammar/matcher.h"
#include "grammar/schema_compiler.h"
#include "tokenizer/tokenizer.h"

namespace qvl::grammar {
namespace {

using nlohmann::ordered_json;

struct Vocabulary {
  std::vector<std::string> bytes;
  std::unique_ptr<TokenTrie> trie;
};

const Vocabulary& vocabulary() {
  static const Vocabulary v = [] {
    const Tokenizer tok = Tokenizer::from_model_dir(QVL_TESTDATA_DIR "/qwen3vl-tiny-a");
    Vocabulary out;
    out.bytes.resize(static_cast<size_t>(tok.vocab_size()));
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      if (!tok.is_special_token(id)) out.bytes[id] = std::string(tok.token_bytes(id));
    }
    out.trie = std::make_unique<TokenTrie>(out.bytes);
    return out;
  }();
  return v;
}

bool bit(const std::vector<uint64_t>& bits, size_t id) {
  return (bits[id / 64] >> (id % 64)) & 1;
}

const char* const kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
        "tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"maxItems":3}},
        "required":["name","age"],"additionalProperties":false})",
    R"({"type":"object","properties":{"when":{"type":"string","format":"date-time"},
        "score":{"type":["number","null"]},"ok":{"type":"boolean"}},"required":["when","ok"]})",
    R"({"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},
        "kids":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}},"required":["v"]}},
        "$ref":"#/$defs/n"})",
    R"({"type":"array","items":{"anyOf":[{"type":"string"},{"type":"number"}]},"minItems":1})",
};

TEST(TokenWalk, MaskEqualsBruteForce) {
  const Vocabulary& v = vocabulary();
  const auto g = compile_json_schema(ordered_json::parse(kSchemas[0]));
  // States: the start, inside a key, inside free string content, after a colon.
  for (const char* prefix : {"", "{\"na", "{\"name\": \"Bob", "{\"name\":\"x\",\"age\":"}) {
    Matcher m(g);
    ASSERT_TRUE(m.advance(prefix));
    // Unconstrained, and two bytes of slack over the shortest completion (closing mode).
    for (int64_t budget : {int64_t{1000}, m.distance() + 2}) {
      std::vector<uint64_t> bits;
      m.allowed_tokens(*v.trie, budget, bits);
      size_t count = 0;
      for (size_t id = 0; id < v.bytes.size(); ++id) {
        bool expected = false;
        if (!v.bytes[id].empty()) {
          MatchState a = m.state(), b;
          expected = true;
          for (char ch : v.bytes[id]) {
            if (!m.step(a, static_cast<uint8_t>(ch), b)) {
              expected = false;
              break;
            }
            std::swap(a, b);
          }
          expected = expected && m.distance(a) <= budget;
        }
        ASSERT_EQ(bit(bits, id), expected) << "prefix '" << prefix << "' token " << id << " '"
                                           << v.bytes[id] << "' budget " << budget;
        count += expected;
      }
      EXPECT_GT(count, 0u) << "prefix '" << prefix << "' budget " << budget;
    }
  }
}

TEST(TokenWalk, RandomWalksAlwaysFinishWithinBudget) {
  const Vocabulary& v = vocabulary();
  int walks = 0;
  for (const char* schema : kSchemas) {
    const auto g = compile_json_schema(ordered_json::parse(schema));
    for (uint64_t seed = 0; seed < 6; ++seed) {
      std::mt19937_64 rng(seed);
      Matcher m(g);
      std::string text;
      const int64_t budget = 40 + static_cast<int64_t>(seed) * 20;
      std::vector<uint64_t> bits;
      std::vector<int32_t> allowed;
      for (int64_t left = budget; left > 0; --left) {
        if (m.finished()) break;
        m.allowed_tokens(*v.trie, left - 1, bits);
        allowed.clear();
        for (size_t id = 0; id < v.bytes.size(); ++id) {
          if (bit(bits, id)) allowed.push_back(static_cast<int32_t>(id));
        }
        ASSERT_FALSE(allowed.empty() && !m.accepting()) << "dead end after: " << text;
        // End when complete with some probability, as a model saying EOS would.
        if (allowed.empty() || (m.accepting() && rng() % 4 == 0)) break;
        const int32_t id = allowed[rng() % allowed.size()];
        ASSERT_TRUE(m.advance(v.bytes[id]));
        text += v.bytes[id];
      }
      ASSERT_TRUE(m.accepting()) << "budget " << budget << " ran out: " << text;
      EXPECT_TRUE(ordered_json::accept(text)) << text;
      ++walks;
    }
  }
  EXPECT_EQ(walks, 24);
}

TEST(TokenWalk, ToolCallWalksFinish) {
  const Vocabulary& v = vocabulary();
  const auto g = tool_call_grammar(
      {{"get_weather", ordered_json::parse(R"({"type":"object","properties":{"city":
          {"type":"string"},"unit":{"enum":["c","f"]}},"required":["city","unit"]})")}},
      1);
  for (uint64_t seed = 0; seed < 4; ++seed) {
    std::mt19937_64 rng(seed);
    Matcher m(g);
    std::string text;
    std::vector<uint64_t> bits;
    for (int64_t left = 80; left > 0 && !m.finished(); --left) {
      m.allowed_tokens(*v.trie, left - 1, bits);
      std::vector<int32_t> allowed;
      for (size_t id = 0; id < v.bytes.size(); ++id) {
        if (bit(bits, id)) allowed.push_back(static_cast<int32_t>(id));
      }
      ASSERT_FALSE(allowed.empty()) << text;
      const int32_t id = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.advance(v.bytes[id]));
      text += v.bytes[id];
    }
    ASSERT_TRUE(m.finished()) << text;
    EXPECT_EQ(text.rfind("<tool_call>\n{", 0), 0u) << text;
  }
}

}  // namespace
}  // namespace qvl::grammar
