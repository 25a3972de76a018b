#include "server/reasoning_split.h"

#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/openai_format.h"

namespace qvl::server {
namespace {

using nlohmann::json;

TEST(ReasoningSplit, SplitsAtTheEndOfThinking) {
  SplitAnswer s = split_reasoning("The sky scatters blue light.\n</think>\n\nRayleigh scattering.");
  EXPECT_EQ(s.reasoning, "The sky scatters blue light.");
  ASSERT_TRUE(s.content);
  EXPECT_EQ(*s.content, "Rayleigh scattering.");

  s = split_reasoning("  <think>\nself-opened\n</think>answer</think> kept");
  EXPECT_EQ(s.reasoning, "self-opened");
  EXPECT_EQ(*s.content, "answer</think> kept");  // only the first close ends the reasoning

  s = split_reasoning("cut off by max_tokens \n");
  EXPECT_EQ(s.reasoning, "cut off by max_tokens");
  EXPECT_FALSE(s.content);  // the answer never began

  s = split_reasoning("</think>\n\n");
  EXPECT_EQ(s.reasoning, "");
  ASSERT_TRUE(s.content);
  EXPECT_EQ(*s.content, "");

  s = split_reasoning("<thinking> is not the tag</think>x");
  EXPECT_EQ(s.reasoning, "<thinking> is not the tag");
  EXPECT_EQ(*s.content, "x");
}

// Every way of cutting the text into deltas gives the same two texts, with no reasoning after the
// first content and nothing of a tag leaking into either.
TEST(ReasoningSplit, StreamedDeltasAddUpWhereverTheyAreCut) {
  const std::string text = "\n<think>\nStep one.\n\nStep two.  \n</think>\n\nThe answer.\n";
  const SplitAnswer whole = split_reasoning(text);
  EXPECT_EQ(whole.reasoning, "Step one.\n\nStep two.");
  EXPECT_EQ(*whole.content, "The answer.\n");
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); b += 3) {
      ReasoningStream stream;
      std::string reasoning, content;
      bool content_seen = false;
      for (const std::string_view piece :
           {std::string_view(text).substr(0, a), std::string_view(text).substr(a, b - a),
            std::string_view(text).substr(b)}) {
        const ReasoningDelta d = stream.feed(piece);
        if (content_seen) {
          EXPECT_TRUE(d.reasoning.empty()) << a << " " << b;
        }
        reasoning += d.reasoning;
        content += d.content;
        content_seen = content_seen || !d.content.empty();
      }
      const ReasoningDelta tail = stream.finish();
      reasoning += tail.reasoning;
      content += tail.content;
      EXPECT_EQ(reasoning, whole.reasoning) << a << " " << b;
      EXPECT_EQ(content, *whole.content) << a << " " << b;
    }
  }
}

TEST(ReasoningSplit, HoldsBackOnlyWhatMayBeATagOrTrailingSpace) {
  ReasoningStream stream;
  EXPECT_EQ(stream.feed("<thi").reasoning, "");  // may be the model's own <think>
  EXPECT_EQ(stream.feed("nk>Hello ").reasoning, "Hello");
  EXPECT_EQ(stream.feed("world</th").reasoning, " world");
  const ReasoningDelta d = stream.feed("ink>\n\nHi");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Hi");
  EXPECT_TRUE(stream.answer_started());
  ReasoningStream cut;
  EXPECT_EQ(cut.feed("ends with </thi").reasoning, "ends with");
  EXPECT_EQ(cut.finish().reasoning, " </thi");  // never closed: it was text
}

TEST(ReasoningSplit, RequestOptionsOfOtherServers) {
  EXPECT_EQ(read_reasoning_output(json::object()), ReasoningOutput::kSplit);
  EXPECT_EQ(read_reasoning_output({{"reasoning_format", "deepseek"}}), ReasoningOutput::kSplit);
  EXPECT_EQ(read_reasoning_output({{"reasoning_format", "auto"}}), ReasoningOutput::kSplit);
  EXPECT_EQ(read_reasoning_output({{"reasoning_format", "none"}}), ReasoningOutput::kRaw);
  EXPECT_EQ(read_reasoning_output({{"include_reasoning", false}}), ReasoningOutput::kOmit);
  EXPECT_EQ(read_reasoning_output({{"include_reasoning", true}}), ReasoningOutput::kSplit);
  EXPECT_EQ(read_reasoning_output({{"include_reasoning", nullptr}}), ReasoningOutput::kSplit);
  try {
    read_reasoning_output({{"reasoning_format", "deepseek-legacy"}});
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.to_json()["error"]["param"], "reasoning_format");
  }
  EXPECT_THROW(read_reasoning_output({{"include_reasoning", "no"}}), ApiError);
}

TEST(ReasoningSplit, CompletionMessageFields) {
  GenerationResult result;
  result.text =
      "Look at the tool.\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n"
      "</tool_call>";
  const CompletionIdentity id{"chatcmpl-x", 1, "m"};
  json message = completion_json(id, result, true, false, ReasoningOutput::kSplit)["choices"][0];
  EXPECT_EQ(message["finish_reason"], "tool_calls");
  message = message["message"];
  EXPECT_EQ(message["reasoning_content"], "Look at the tool.");
  EXPECT_TRUE(message["content"].is_null());
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "f");

  result.text = "thinking, cut";
  message =
      completion_json(id, result, false, false, ReasoningOutput::kSplit)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "thinking, cut");
  EXPECT_TRUE(message["content"].is_null());

  result.text = "r</think>a";
  message =
      completion_json(id, result, false, false, ReasoningOutput::kOmit)["choices"][0]["message"];
  EXPECT_FALSE(message.contains("reasoning_content"));
  EXPECT_EQ(message["content"], "a");
  message =
      completion_json(id, result, false, false, ReasoningOutput::kRaw)["choices"][0]["message"];
  EXPECT_FALSE(message.contains("reasoning_content"));  // also what Instruct models get
  EXPECT_EQ(message["content"], "r</think>a");
}

}  // namespace
}  // namespace qvl::server
