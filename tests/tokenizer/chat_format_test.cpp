#include "tokenizer/chat_format.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer_test_support.h"

namespace qvl {
namespace {

using nlohmann::ordered_json;

std::string golden_dir() {
  const char* env = std::getenv("QVL_GOLDEN_DIR");
  return env && *env ? env : std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";
}

// Minimal safetensors reader (the real loader lives in src/model/): 8-byte little-endian header
// length, JSON header, then the data block.
std::vector<int64_t> read_int64_tensor(const std::string& path, const std::string& key) {
  const std::string bytes = read_text_file(path);
  if (bytes.size() < 8) throw std::runtime_error(path + ": too short");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[i]);
  if (header_len > bytes.size() - 8) throw std::runtime_error(path + ": bad header length");
  const auto header = nlohmann::json::parse(bytes.substr(8, header_len));
  const auto& entry = header.at(key);
  if (entry.at("dtype") != "I64") throw std::runtime_error(key + " is not int64");
  const uint64_t begin = entry.at("data_offsets").at(0), end = entry.at("data_offsets").at(1);
  const uint64_t data_start = 8 + header_len;
  if (end < begin || (end - begin) % 8 != 0 || data_start + end > bytes.size()) {
    throw std::runtime_error(key + ": bad data offsets");
  }
  std::vector<int64_t> values((end - begin) / 8);
  std::memcpy(values.data(), bytes.data() + data_start + begin, end - begin);
  return values;
}

TEST(ChatFormat, GoldenPromptsAndInputIds) {
  const std::string dir = golden_dir();
  const auto manifest = ordered_json::parse(read_text_file(dir + "/manifest.json"));
  const Tokenizer tokenizer = Tokenizer::from_model_dir(dir);
  const int32_t image_pad = tokenizer.token_id_or_throw("<|image_pad|>");
  ASSERT_FALSE(manifest.at("cases").empty());
  for (const auto& c : manifest.at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE("case " + name);
    const std::vector<ChatMessage> messages = parse_chat_messages(c.at("messages"));
    const std::string prompt = render_chat(messages, /*add_generation_prompt=*/true);
    EXPECT_EQ(prompt, c.at("prompt_text").get<std::string>());

    // The processor expands each <|image_pad|> to the image's token count; collapse those runs
    // and compare the rest exactly.
    const std::vector<int64_t> golden =
        read_int64_tensor(dir + "/cases/" + name + ".safetensors", "input_ids");
    std::vector<int64_t> collapsed;
    std::vector<size_t> pad_runs;
    for (size_t i = 0; i < golden.size(); ++i) {
      if (golden[i] == image_pad && i > 0 && golden[i - 1] == image_pad) {
        ++pad_runs.back();
        continue;
      }
      if (golden[i] == image_pad) pad_runs.push_back(1);
      collapsed.push_back(golden[i]);
    }
    const std::vector<int32_t> ids = tokenizer.encode(prompt);
    EXPECT_EQ(std::vector<int64_t>(ids.begin(), ids.end()), collapsed);
    EXPECT_EQ(pad_runs.size(), rendered_image_refs(messages).size());
    if (c.contains("image_grid_thw") && c["image_grid_thw"].is_array()) {
      ASSERT_EQ(pad_runs.size(), c["image_grid_thw"].size());
      for (size_t k = 0; k < pad_runs.size(); ++k) {
        const auto& thw = c["image_grid_thw"][k];
        EXPECT_EQ(pad_runs[k],
                  thw[0].get<size_t>() * thw[1].get<size_t>() * thw[2].get<size_t>() / 4);
      }
    }
    if (c.contains("generated_tokens") && c.contains("generated_text")) {
      const auto generated = c["generated_tokens"].get<std::vector<int32_t>>();
      EXPECT_EQ(tokenizer.decode(generated, /*skip_special_tokens=*/true),
                c["generated_text"].get<std::string>());
    }
  }
}

// Conversations rendered by jinja2 from the real template (chat_template_cases.json).
TEST(ChatFormat, MatchesJinjaRenderingOfTheTemplate) {
  const auto cases = ordered_json::parse(
      read_text_file(std::string(QVL_SOURCE_DIR) + "/tests/tokenizer/chat_template_cases.json"));
  ASSERT_GE(cases.at("cases").size(), 5u);
  for (const auto& c : cases.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    ChatRenderOptions options;
    options.add_generation_prompt = c.at("add_generation_prompt");
    if (c.contains("tools")) {
      for (const auto& tool : c["tools"]) options.tools.push_back(render_tool_json(tool));
    }
    EXPECT_EQ(render_chat(parse_chat_messages(c.at("messages")), options),
              c.at("expected").get<std::string>());
  }
}

// The same conversations rendered by jinja2 from the Thinking and the Instruct templates
// (thinking_template_cases.json, written by render_thinking_cases.py).
TEST(ChatFormat, MatchesJinjaRenderingOfBothVariants) {
  const auto cases = ordered_json::parse(read_text_file(
      std::string(QVL_SOURCE_DIR) + "/tests/tokenizer/thinking_template_cases.json"));
  ASSERT_GE(cases.at("cases").size(), 15u);
  for (const auto& c : cases.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    ChatRenderOptions options;
    options.add_generation_prompt = c.at("add_generation_prompt");
    if (c.contains("tools")) {
      for (const auto& tool : c["tools"]) options.tools.push_back(render_tool_json(tool));
    }
    const std::vector<ChatMessage> messages = parse_chat_messages(c.at("messages"));
    options.variant = ChatTemplateVariant::kThinking;
    EXPECT_EQ(render_chat(messages, options), c.at("thinking").get<std::string>());
    options.variant = ChatTemplateVariant::kInstruct;
    EXPECT_EQ(render_chat(messages, options), c.at("instruct").get<std::string>());
  }
}

TEST(ChatFormat, ThinkingRendersNullAssistantContentAsEmpty) {
  ChatRenderOptions options;
  options.variant = ChatTemplateVariant::kThinking;
  options.add_generation_prompt = false;
  const auto messages = parse_chat_messages_json(R"([{"role": "user", "content": "q"},
    {"role": "assistant", "content": null, "reasoning_content": "r",
     "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}])");
  EXPECT_EQ(render_chat(messages, options),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\n"
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>\n");
}

TEST(ChatFormat, KeepsImageReferencesInPromptOrder) {
  const auto messages = parse_chat_messages_json(R"([
    {"role": "user", "content": [
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
      {"type": "text", "text": "and"},
      {"type": "image_url", "image_url": "https://example.com/b.jpg"},
      {"image": "/data/c.png"}, {"type": "image"}]}])");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_FALSE(messages[0].content_is_string);
  EXPECT_EQ(rendered_image_refs(messages),
            (std::vector<std::string>{"data:image/png;base64,AA==", "https://example.com/b.jpg",
                                      "/data/c.png", ""}));
}

void expect_invalid(const std::string& json, const std::string& fragment) {
  try {
    parse_chat_messages_json(json);
    ADD_FAILURE() << "no error for " << json;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ChatFormat, RejectsBadMessagesClearly) {
  expect_invalid("[]", "must not be empty");
  expect_invalid("{}", "must be an array");
  expect_invalid("not json", "not valid JSON");
  expect_invalid(R"([{"role": "robot", "content": "x"}])", "unsupported role \"robot\"");
  expect_invalid(R"([{"content": "x"}])", "\"role\" must be a string");
  expect_invalid(R"([{"role": "user"}])", "\"content\" is required");
  expect_invalid(R"([{"role": "user", "content": 5}])", "\"content\" must be");
  expect_invalid(R"([{"role": "user", "content": [{"type": "input_audio"}]}])",
                 "unsupported content part type \"input_audio\"");
  expect_invalid(R"([{"role": "user", "content": [{"type": "video", "video": "v.mp4"}]}])",
                 "unsupported content part type \"video\"");
  expect_invalid(R"([{"role": "user", "content": [{"type": "text"}]}])",
                 "\"text\" must be a string");
  expect_invalid(R"([{"role": "user", "content": ["plain"]}])", "must be an object");
  expect_invalid(R"([{"role": "user", "content": "a"}, {"role": "system", "content": [
                   {"type": "image_url", "image_url": {"url": "x"}}]}])",
                 "messages[1]: images are only supported");
  expect_invalid(R"([{"role": "user", "content": [{"type": "image_url", "image_url": 3}]}])",
                 "\"image_url\" must be a string or");
  expect_invalid(R"([{"role": "user", "content": "x", "tool_calls": []}])", "tool_calls");
  expect_invalid(R"([{"role": "assistant", "content": "x", "reasoning_content": 1}])",
                 "\"reasoning_content\" must be a string");
  expect_invalid(R"([{"role": "user", "content": "x", "reasoning_content": "r"}])",
                 "on an assistant message");
  EXPECT_THROW(render_chat({}, true), Error);
  ChatMessage odd;
  odd.role = "narrator";
  EXPECT_THROW(render_chat({odd}, true), Error);
}

TEST(ChatFormat, TojsonMatchesPythonJsonDumps) {
  const auto value = ordered_json::parse(
      R"({"z": 1, "a": [true, null, 2.5, "q\"\\\n\t\u0001é"], "e": {}, "l": []})");
  EXPECT_EQ(render_tool_json(value),
            "{\"z\": 1, \"a\": [true, null, 2.5, \"q\\\"\\\\\\n\\t\\u0001\xC3\xA9\"], \"e\": {}, "
            "\"l\": []}");
}

TEST(ChatTemplateCheck, RecognisesQwen3VlTemplate) {
  const ChatTemplateCheck golden = check_chat_template(golden_dir());
  EXPECT_TRUE(golden.found);
  EXPECT_TRUE(golden.known);
  EXPECT_NE(golden.source.find("chat_template.json"), std::string::npos);
  EXPECT_TRUE(is_known_chat_template(golden_dir()));
  EXPECT_EQ(golden.variant, ChatTemplateVariant::kInstruct);

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("qvl_chat_tpl_" + std::to_string(getpid()));
  fs::create_directories(dir);
  EXPECT_FALSE(check_chat_template(dir.string()).found);  // no template at all
  const std::string text =
      nlohmann::json::parse(read_text_file(golden_dir() + "/chat_template.json"))
          .at("chat_template");
  {
    nlohmann::json config = {{"chat_template", text}};
    std::ofstream(dir / "tokenizer_config.json") << config.dump();
  }
  EXPECT_TRUE(is_known_chat_template(dir.string()));  // found in tokenizer_config.json
  std::ofstream(dir / "chat_template.jinja") << text << "{# changed #}";
  const ChatTemplateCheck changed = check_chat_template(dir.string());  // .jinja wins
  EXPECT_TRUE(changed.found);
  EXPECT_FALSE(changed.known);
  EXPECT_NE(changed.source.find("chat_template.jinja"), std::string::npos);
  const std::string thinking = read_text_file(
      std::string(QVL_SOURCE_DIR) + "/tests/tokenizer/qwen3vl_thinking_chat_template.jinja");
  std::ofstream(dir / "chat_template.jinja", std::ios::trunc) << thinking;
  const ChatTemplateCheck thinking_check = check_chat_template(dir.string());
  EXPECT_TRUE(thinking_check.known);
  EXPECT_EQ(thinking_check.variant, ChatTemplateVariant::kThinking);
  EXPECT_EQ(chat_template_variant(thinking), ChatTemplateVariant::kThinking);
  EXPECT_EQ(chat_template_variant(thinking + " "), ChatTemplateVariant::kInstruct);
  EXPECT_STREQ(chat_template_variant_name(ChatTemplateVariant::kThinking), "Thinking");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qvl
