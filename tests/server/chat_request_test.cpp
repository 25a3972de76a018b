#include "server/chat_request.h"

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace qvl::server {
namespace {

ModelInfo test_model() {
  ModelInfo model;
  model.name = "tiny";
  model.context_length = 4096;
  model.vocab_size = 151936;
  model.image_min_tokens = 16;
  model.image_max_tokens = 1024;
  model.default_sampling.max_tokens = 100;
  model.default_sampling.temperature = 0.7f;
  return model;
}

ChatRequest parse(const std::string& body, RequestLimits limits = {}) {
  return parse_chat_request(body, test_model(), limits);
}

// The ApiError a body produces (fails the test if it parses).
ApiError error_of(const std::string& body, RequestLimits limits = {}) {
  try {
    parse(body, limits);
  } catch (const ApiError& error) {
    return error;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "", "");
}

const std::string kPng1x1 =
    "data:image/"
    "png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg"
    "==";

TEST(ChatRequest, StringContentAndDefaults) {
  const ChatRequest chat =
      parse(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"unknown_field":[1,2]})");
  ASSERT_EQ(chat.generation.messages.size(), 1u);
  EXPECT_EQ(chat.generation.messages[0].role, "user");
  EXPECT_TRUE(chat.generation.messages[0].content_is_string);
  EXPECT_EQ(chat.generation.messages[0].parts[0].text, "hi");
  EXPECT_EQ(chat.generation.sampling.max_tokens, 100);  // the model's default
  EXPECT_FLOAT_EQ(chat.generation.sampling.temperature, 0.7f);
  EXPECT_FALSE(chat.stream);
}

TEST(ChatRequest, AllSamplingFields) {
  const ChatRequest chat = parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],
      "stream":true,"stream_options":{"include_usage":true},"max_tokens":5,
      "max_completion_tokens":7,"temperature":0,"top_p":0.5,"top_k":-1,"min_p":0.1,"seed":-3,
      "stop":["a","","bc"],"presence_penalty":1.5,"frequency_penalty":-1,
      "repetition_penalty":1.1,"n":1,"logprobs":null})");
  const SamplingParams& s = chat.generation.sampling;
  EXPECT_TRUE(chat.stream);
  EXPECT_TRUE(chat.include_usage);
  EXPECT_EQ(s.max_tokens, 7);
  EXPECT_EQ(s.temperature, 0.0f);
  EXPECT_FLOAT_EQ(s.top_p, 0.5f);
  EXPECT_EQ(s.top_k, 0);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  ASSERT_TRUE(s.seed.has_value());
  EXPECT_EQ(*s.seed, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(s.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_FLOAT_EQ(s.presence_penalty, 1.5f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
  EXPECT_EQ(parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],"stop":"END"})")
                .generation.sampling.stop,
            std::vector<std::string>{"END"});
}

TEST(ChatRequest, ImagePartsAndDetailBudgets) {
  const std::string body = R"({"model":"m","messages":[{"role":"developer","content":"sys"},
      {"role":"user","content":[{"type":"text","text":"what"},
        {"type":"image_url","image_url":{"url":")" +
                           kPng1x1 + R"(","detail":"low"}},
        {"type":"image_url","image_url":{"url":")" +
                           kPng1x1 + R"(","detail":"high"}},
        {"type":"image_url","image_url":{"url":")" +
                           kPng1x1 + R"("}}]}]})";
  const ChatRequest chat = parse(body);
  EXPECT_EQ(chat.generation.messages[0].role, "system");
  const Message& user = chat.generation.messages[1];
  EXPECT_FALSE(user.content_is_string);
  ASSERT_EQ(user.parts.size(), 4u);
  EXPECT_EQ(user.parts[1].kind, ContentPart::Kind::kImage);
  EXPECT_EQ(user.parts[3].image_index, 2);
  ASSERT_EQ(chat.generation.images.size(), 3u);
  EXPECT_GT(chat.generation.images[0].bytes.size(), 60u);
  EXPECT_EQ(chat.generation.images[0].bytes[1], 'P');
  EXPECT_EQ(chat.generation.images[0].max_tokens, 256);   // low
  EXPECT_EQ(chat.generation.images[1].max_tokens, 1280);  // high, 4096/3 = 1365 share
  EXPECT_EQ(chat.generation.images[2].max_tokens, 1024);  // auto = engine default
  EXPECT_EQ(chat.generation.images[2].min_tokens, 16);
}

TEST(ChatRequest, ImageBudgetIsSharedWithinTheRequestLimit) {
  RequestLimits limits;
  limits.max_total_image_tokens = 1000;
  std::string parts;
  for (int i = 0; i < 4; ++i) {
    parts += std::string(i ? "," : "") + R"({"type":"image_url","image_url":{"url":")" + kPng1x1 +
             R"(","detail":"high"}})";
  }
  const ChatRequest chat =
      parse(R"({"model":"m","messages":[{"role":"user","content":[)" + parts + "]}]}", limits);
  int64_t total = 0;
  for (const ImageInput& image : chat.generation.images) total += image.max_tokens;
  EXPECT_LE(total, 1000);
  EXPECT_EQ(chat.generation.images[0].max_tokens, 250);
}

TEST(ChatRequest, RemoteUrlsOnlyWhenEnabled) {
  const std::string body =
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]})";
  EXPECT_EQ(error_of(body).code(), "remote_images_disabled");
  RequestLimits limits;
  limits.allow_remote_images = true;
  const ChatRequest chat = parse(body, limits);
  ASSERT_EQ(chat.remote_images.size(), 1u);
  EXPECT_EQ(chat.remote_images[0].url, "https://example.com/a.png");
  EXPECT_EQ(chat.remote_images[0].image_index, 0);
}

struct BadCase {
  const char* body;
  const char* param;  // expected "param"
};

TEST(ChatRequest, RejectsBadRequestsNamingTheField) {
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"{", ""},
      {"[]", ""},
      {"null", ""},
      {std::string(100, '[') + std::string(100, ']'), ""},
      {R"({"messages":[{"role":"user","content":"x"}]})", "model"},
      {R"({"model":5,)" + user + "}", "model"},
      {R"({"model":"m"})", "messages"},
      {R"({"model":"m","messages":{}})", "messages"},
      {R"({"model":"m","messages":[]})", "messages"},
      {R"({"model":"m","messages":[5]})", "messages[0]"},
      {R"({"model":"m","messages":[{"content":"x"}]})", "messages[0].role"},
      {R"({"model":"m","messages":[{"role":"wizard","content":"x"}]})", "messages[0].role"},
      {R"({"model":"m","messages":[{"role":"user"}]})", "messages[0].content"},
      {R"({"model":"m","messages":[{"role":"user","content":7}]})", "messages[0].content"},
      {R"({"model":"m","messages":[{"role":"user","content":[]}]})", "messages[0].content"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"audio"}]}]})",
       "messages[0].content[0].type"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})",
       "messages[0].content[0].text"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@@"}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain;base64,aGk="}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk=","detail":"ultra"}}]}]})",
       "messages[0].content[0].image_url.detail"},
      {R"({"model":"m",)" + user + R"(,"max_tokens":-1})", "max_tokens"},
      {R"({"model":"m",)" + user + R"(,"max_tokens":0})", "max_tokens"},
      {R"({"model":"m",)" + user + R"(,"max_tokens":1e300})", "max_tokens"},
      {R"({"model":"m",)" + user + R"(,"max_tokens":99999999999999999999})", "max_tokens"},
      {R"({"model":"m",)" + user + R"(,"max_tokens":"10"})", "max_tokens"},
      {R"({"model":"m",)" + user + R"(,"max_tokens":1.5})", "max_tokens"},
      {R"({"model":"m",)" + user + R"(,"max_completion_tokens":5000})", "max_completion_tokens"},
      {R"({"model":"m",)" + user + R"(,"temperature":3})", "temperature"},
      {R"({"model":"m",)" + user + R"(,"temperature":"hot"})", "temperature"},
      {R"({"model":"m",)" + user + R"(,"top_p":0})", "top_p"},
      {R"({"model":"m",)" + user + R"(,"top_k":-2})", "top_k"},
      {R"({"model":"m",)" + user + R"(,"min_p":2})", "min_p"},
      {R"({"model":"m",)" + user + R"(,"seed":"x"})", "seed"},
      {R"({"model":"m",)" + user + R"(,"stop":5})", "stop"},
      {R"({"model":"m",)" + user + R"(,"stop":["a",1]})", "stop[1]"},
      {R"({"model":"m",)" + user + R"(,"stop":["1","2","3","4","5","6","7","8","9"]})", "stop"},
      {R"({"model":"m",)" + user + R"(,"presence_penalty":-3})", "presence_penalty"},
      {R"({"model":"m",)" + user + R"(,"frequency_penalty":9})", "frequency_penalty"},
      {R"({"model":"m",)" + user + R"(,"repetition_penalty":0})", "repetition_penalty"},
      {R"({"model":"m",)" + user + R"(,"n":2})", "n"},
      {R"({"model":"m",)" + user + R"(,"stream":"yes"})", "stream"},
      {R"({"model":"m",)" + user + R"(,"stream_options":true})", "stream_options"},
  };
  for (const auto& [body, param] : cases) {
    const ApiError error = error_of(body);
    EXPECT_EQ(error.status(), 400) << body;
    EXPECT_EQ(error.param(), param) << body;
    EXPECT_EQ(error.type(), "invalid_request_error") << body;
    EXPECT_FALSE(error.message().empty()) << body;
    const auto json = error.to_json();
    EXPECT_TRUE(json["error"].contains("code")) << body;
  }
}

TEST(ChatRequest, TooManyImages) {
  RequestLimits limits;
  limits.max_images = 2;
  std::string parts;
  for (int i = 0; i < 3; ++i) {
    parts += std::string(i ? "," : "") + R"({"type":"image_url","image_url":{"url":")" + kPng1x1 +
             R"("}})";
  }
  const ApiError error =
      error_of(R"({"model":"m","messages":[{"role":"user","content":[)" + parts + "]}]}", limits);
  EXPECT_EQ(error.code(), "too_many_images");
  EXPECT_NE(error.message().find("at most 2"), std::string::npos);
}

TEST(ChatRequest, OversizedImageIsRejectedBeforeDecoding) {
  RequestLimits limits;
  limits.max_image_bytes = 10;
  const ApiError error = error_of(
      R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":")" +
          kPng1x1 + R"("}}]}]})",
      limits);
  EXPECT_EQ(error.code(), "image_too_large");
}

TEST(ChatRequest, NullMeansAbsent) {
  const ChatRequest chat = parse(
      R"({"model":"m","messages":[{"role":"assistant","content":null},{"role":"user","content":"x"}],"max_tokens":null,"stop":null,"stream":null})");
  EXPECT_EQ(chat.generation.sampling.max_tokens, 100);
  EXPECT_EQ(chat.generation.messages.size(), 2u);
}

}  // namespace
}  // namespace qvl::server

namespace qvl::server {
namespace {

TEST(ChatRequest, LogprobsFields) {
  const std::string base = R"({"model":"m","messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(parse(base + "}").generation.top_logprobs, -1);
  EXPECT_EQ(parse(base + R"(,"logprobs":false})").generation.top_logprobs, -1);
  EXPECT_EQ(parse(base + R"(,"logprobs":true})").generation.top_logprobs, 0);
  EXPECT_EQ(parse(base + R"(,"logprobs":true,"top_logprobs":20})").generation.top_logprobs, 20);
  EXPECT_EQ(parse(base + R"(,"logprobs":true,"top_logprobs":null})").generation.top_logprobs, 0);
  for (const char* bad :
       {R"(,"logprobs":true,"top_logprobs":21})", R"(,"logprobs":true,"top_logprobs":-1})",
        R"(,"logprobs":true,"top_logprobs":2.5})", R"(,"top_logprobs":3})",
        R"(,"logprobs":false,"top_logprobs":3})", R"(,"logprobs":1})"}) {
    const ApiError e = error_of(base + bad);
    EXPECT_EQ(e.status(), 400) << bad;
    EXPECT_TRUE(e.param() == "logprobs" || e.param() == "top_logprobs") << bad << ": " << e.param();
  }
}

TEST(ChatRequest, UnimplementedOpenAiFieldsAreRefusedByName) {
  const std::string base = R"({"model":"m","messages":[{"role":"user","content":"x"}],)";
  for (const char* field :
       {R"("functions":[])", R"("function_call":"auto")", R"("logit_bias":{"50256":-100})",
        R"("audio":{"voice":"alloy","format":"wav"})", R"("modalities":["text","audio"])",
        R"("prediction":{"type":"content","content":"x"})", R"("web_search_options":{})",
        R"("reasoning_effort":"low")", R"("verbosity":"low")"}) {
    const std::string name = std::string(field).substr(1, std::string(field).find('"', 1) - 1);
    const ApiError e = error_of(base + field + "}");
    EXPECT_EQ(e.status(), 400) << field;
    EXPECT_EQ(e.param(), name);
    EXPECT_EQ(e.code(), "unsupported_parameter");
    EXPECT_NE(e.message().find("not supported"), std::string::npos) << e.message();
  }
  // Defaults that ask for nothing more, ignored fields, null and non-OpenAI fields are accepted.
  // tools and response_format are implemented (tests/server/structured_output.test.mjs).
  for (const char* ok :
       {R"("logit_bias":{})", R"("modalities":["text"])", R"("tools":null)",
        R"("response_format":{"type":"json_object"})", R"("user":"u1")", R"("store":false)",
        R"("metadata":{"a":"b"})", R"("service_tier":"auto")", R"("cache_prompt":true)"}) {
    EXPECT_NO_THROW(parse(base + ok + "}")) << ok;
  }
}

TEST(ChatRequest, ReasoningOfThinkingModels) {
  ModelInfo thinking = test_model();
  thinking.thinking = true;
  thinking.variant = "Thinking";
  const std::string history =
      R"({"model":"m","messages":[{"role":"user","content":"q"},)"
      R"({"role":"assistant","content":"a","reasoning_content":"r"},)"
      R"({"role":"assistant","content":"b","reasoning_content":null},{"role":"user","content":"q2"}])";
  ChatRequest r = parse_chat_request(history + "}", thinking, {});
  EXPECT_EQ(r.reasoning, ReasoningOutput::kSplit);
  ASSERT_TRUE(r.generation.messages[1].reasoning_content);
  EXPECT_EQ(*r.generation.messages[1].reasoning_content, "r");
  EXPECT_FALSE(r.generation.messages[2].reasoning_content);  // null is absent
  EXPECT_EQ(parse_chat_request(history + R"(,"include_reasoning":false})", thinking, {}).reasoning,
            ReasoningOutput::kOmit);
  EXPECT_EQ(parse_chat_request(history + R"(,"reasoning_format":"none"})", thinking, {}).reasoning,
            ReasoningOutput::kRaw);
  // Instruct models have no reasoning to split; the fields are accepted.
  EXPECT_EQ(parse(history + R"(,"include_reasoning":false})").reasoning, ReasoningOutput::kRaw);
  EXPECT_EQ(error_of(history + R"(,"reasoning_format":"html"})").param(), "reasoning_format");
  const ApiError e = error_of(
      R"({"model":"m","messages":[{"role":"user","content":"q","reasoning_content":"r"}]})");
  EXPECT_EQ(e.param(), "messages[0].reasoning_content");
  EXPECT_EQ(error_of(R"({"model":"m","messages":[{"role":"assistant","content":"a",)"
                     R"("reasoning_content":3}]})")
                .param(),
            "messages[0].reasoning_content");
}

}  // namespace
}  // namespace qvl::server
