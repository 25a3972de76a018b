// Tool calls on the wire: requests with tools and tool-call history render the prompt exactly as
// the model's Jinja template does (jinja2 goldens of tests/tokenizer), and answers are split into
// content and tool_calls, whole or streamed.
#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "engine/prompt.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/openai_format.h"

namespace qvl::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ModelInfo tiny_model() {
  ModelInfo model;
  model.context_length = 4096;
  model.vocab_size = 151936;
  model.image_max_tokens = 1024;
  return model;
}

TEST(ToolCalls, RequestWithToolsRendersLikeTheTemplate) {
  const ordered_json cases = ordered_json::parse(
      read_text_file(std::string(QVL_SOURCE_DIR) + "/tests/tokenizer/chat_template_cases.json"));
  int checked = 0;
  for (const ordered_json& c : cases["cases"]) {
    if (!c.contains("tools")) continue;
    ordered_json body = {{"model", "m"}, {"messages", c["messages"]}, {"tools", c["tools"]}};
    RequestLimits limits;
    limits.allow_remote_images = true;  // the case has an image URL; rendering needs no bytes
    const ChatRequest request = parse_chat_request(body.dump(), tiny_model(), limits);
    EXPECT_TRUE(request.parse_tool_calls);
    std::string expected = c["expected"].get<std::string>();
    if (!c["add_generation_prompt"].get<bool>()) expected += "<|im_start|>assistant\n";
    EXPECT_EQ(render_prompt(request.generation.messages, request.generation.tools), expected)
        << c["name"];
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(ToolCalls, ToolChoiceBecomesAConstraint) {
  const std::string tools =
      R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
      "properties":{"a":{"type":"integer"}},"required":["a"]}}},
      {"type":"function","function":{"name":"g"}}])";
  auto parse = [&](const std::string& extra) {
    return parse_chat_request(
        R"({"model":"m","messages":[{"role":"user","content":"x"}],"tools":)" + tools + extra + "}",
        tiny_model(), {});
  };
  EXPECT_EQ(parse("").generation.constraint.kind, OutputConstraint::Kind::kNone);
  const ChatRequest required = parse(R"(,"tool_choice":"required","parallel_tool_calls":false)");
  EXPECT_EQ(required.generation.constraint.kind, OutputConstraint::Kind::kToolCalls);
  EXPECT_EQ(required.generation.constraint.max_tool_calls, 1);
  const ChatRequest named = parse(R"(,"tool_choice":{"type":"function","function":{"name":"g"}})");
  EXPECT_EQ(named.generation.constraint.tool_names, std::vector<std::string>{"g"});
  const ChatRequest none = parse(R"(,"tool_choice":"none")");
  EXPECT_TRUE(none.generation.tools.empty());
  EXPECT_FALSE(none.parse_tool_calls);
}

TEST(ToolCalls, AnswersSplitIntoContentAndCalls) {
  const ParsedAnswer a = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>");
  EXPECT_EQ(a.content, "Let me check.");
  ASSERT_EQ(a.calls.size(), 2u);
  EXPECT_EQ(a.calls[0].name, "f");
  EXPECT_EQ(json::parse(a.calls[0].arguments), json::parse(R"({"a":1})"));
  EXPECT_EQ(a.calls[1].arguments, "{}");
  const ParsedAnswer broken = parse_tool_calls("<tool_call>\nnot json\n</tool_call>");
  EXPECT_TRUE(broken.calls.empty());
  EXPECT_EQ(broken.content, "<tool_call>\nnot json\n</tool_call>");

  GenerationResult result;
  result.text = "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>";
  const json body = completion_json({"id", 1, "m"}, result, true);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(body["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(body["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "g");
}

TEST(ToolCalls, StreamHoldsPartialTagsAndSendsWholeCalls) {
  const std::string answer =
      "Hi <b> there\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call> bye";
  // Every way of cutting the answer into two deltas gives the same result.
  for (size_t cut = 0; cut <= answer.size(); ++cut) {
    ToolCallStream stream;
    std::vector<json> deltas = stream.feed(answer.substr(0, cut));
    for (json& d : stream.feed(answer.substr(cut))) deltas.push_back(std::move(d));
    for (json& d : stream.finish()) deltas.push_back(std::move(d));
    std::string content;
    std::vector<std::string> names;
    for (const json& d : deltas) {
      if (d.contains("content")) content += d["content"].get<std::string>();
      if (d.contains("tool_calls")) {
        EXPECT_EQ(d["tool_calls"][0]["index"], names.size());
        names.push_back(d["tool_calls"][0]["function"]["name"]);
      }
    }
    EXPECT_EQ(content, "Hi <b> there\n bye") << cut;
    EXPECT_EQ(names, (std::vector<std::string>{"f", "g"})) << cut;
    EXPECT_TRUE(stream.any_calls());
  }
}

}  // namespace
}  // namespace qvl::server
