#include "cli/batch_item_runner.h"

#include "base/error.h"
#include "base/mapped_file.h"
#include "server/api_error.h"
#include "server/file_part.h"
#include "server/logprobs_format.h"
#include "server/openai_format.h"
#include "server/reasoning_split.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

const char* finish_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    default:
      return "cancelled";
  }
}

// Structured output was asked for: the answer is written as parsed JSON.
bool wants_json(const json& body) {
  const auto it = body.find("response_format");
  if (it == body.end() || !it->is_object()) return false;
  const json type = it->value("type", json());
  return type == "json_object" || type == "json_schema";
}

}  // namespace

BatchItemRunner::BatchItemRunner(Engine& engine, json defaults, std::string base_dir,
                                 bool ignore_eos)
    : engine_(engine),
      defaults_(std::move(defaults)),
      base_dir_(std::move(base_dir)),
      ignore_eos_(ignore_eos) {
  limits_.allow_file_urls = true;
  limits_.max_image_bytes = EngineOptions().max_image_bytes;
}

json BatchItemRunner::request_body(const BatchItem& item) const {
  json body = item.body;
  for (const auto& [key, value] : defaults_.items()) {
    if (!body.contains(key)) body[key] = value;
  }
  if (!body.contains("model")) body["model"] = engine_.info().name;
  return body;
}

server::ChatRequest BatchItemRunner::translate(const json& body) const {
  server::ChatRequest chat = server::parse_chat_request(body.dump(), engine_.info(), limits_);
  chat.generation.sampling.ignore_eos = ignore_eos_;
  return chat;
}

std::vector<uint8_t> BatchItemRunner::read_file_image(const std::string& url, size_t max_bytes,
                                                      const char* what) const {
  if (max_bytes == 0) max_bytes = limits_.max_image_bytes;
  std::string path = url.substr(7);  // after file://
  if (!path.empty() && path[0] != '/' && !base_dir_.empty()) path = base_dir_ + "/" + path;
  const MappedFile file(path);
  if (file.size() > max_bytes) {
    fail(ErrorCode::kResourceExhausted, std::string(what) + " '" + path + "' is " +
                                            std::to_string(file.size()) + " bytes; the limit is " +
                                            std::to_string(max_bytes));
  }
  if (file.size() == 0) {
    fail(ErrorCode::kInvalidArgument, std::string(what) + " '" + path + "' is empty");
  }
  return {file.data(), file.data() + file.size()};
}

std::optional<BatchLine> BatchItemRunner::run(const BatchItem& item,
                                              const std::atomic<bool>& cancel) {
  BatchLine out;
  out.line = {{"id", item.id}};
  if (!item.file.empty()) out.line["file"] = item.file;
  const auto fail_line = [&](const json& error) {
    out.error = error.value("message", std::string("failed"));
    out.line["error"] = error;
    return out;
  };
  if (!item.error.empty()) {
    return fail_line({{"message", item.error}, {"param", nullptr}, {"code", "invalid_json"}});
  }
  try {
    const json body = request_body(item);
    server::ChatRequest chat = translate(body);
    for (const server::RemoteImage& image : chat.remote_images) {
      if (image.url.rfind("file://", 0) != 0) {
        server::fail_request(image.param, "qvl batch reads file:// and data: image URLs only",
                             "invalid_image_url");
      }
      chat.generation.images[image.image_index].bytes = read_file_image(image.url);
    }
    for (const server::RemoteVideo& video : chat.remote_videos) {  // file:// only here
      if (video.url.rfind("file://", 0) != 0) {
        server::fail_request(video.param, "qvl batch reads file:// and data: video URLs only",
                             "invalid_video_url");
      }
      VideoInput& in = chat.generation.videos[static_cast<size_t>(video.video_index)];
      if (video.frame_index < 0) {
        in.bytes = read_file_image(video.url, limits_.max_video_bytes, "video");
      } else {
        in.frames[static_cast<size_t>(video.frame_index)] = read_file_image(video.url);
      }
    }
    server::expand_documents(chat, limits_);  // `file` parts (data URIs): PDF and TIFF pages
    const GenerationResult result = engine_.generate(chat.generation, {}, &cancel);
    if (result.finish == FinishReason::kCancelled) return std::nullopt;
    out.prompt_tokens = result.stats.prompt_tokens;
    out.completion_tokens = result.stats.completion_tokens;
    // A Thinking model's answer is what follows its reasoning (server/reasoning_split.h).
    std::string text = result.text;
    if (chat.reasoning != server::ReasoningOutput::kRaw) {
      server::SplitAnswer split = server::split_reasoning(result.text);
      text = split.content.value_or("");
      if (chat.reasoning == server::ReasoningOutput::kSplit)
        out.line["reasoning"] = split.reasoning;
    }
    if (wants_json(body)) {
      json answer = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (answer.is_discarded()) {
        out.line["text"] = text;
        return fail_line({{"message", "the answer is not valid JSON"},
                          {"param", nullptr},
                          {"code", "invalid_json_answer"}});
      }
      out.line["answer"] = std::move(answer);
    } else {
      out.line["answer"] = text;
    }
    out.line["finish_reason"] = finish_name(result.finish);
    out.line["usage"] = server::usage_json(result.stats);
    out.line["timings"] = server::timings_json(result.stats);
    if (chat.generation.top_logprobs >= 0) {
      out.line["logprobs"] = server::logprobs_json(result.logprobs)["content"];
    }
    return out;
  } catch (const server::ApiError& e) {
    return fail_line(e.to_json()["error"]);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kCancelled && cancel.load()) return std::nullopt;
    return fail_line(server::api_error_from(e).to_json()["error"]);
  } catch (const std::exception& e) {
    return fail_line({{"message", std::string("internal error: ") + e.what()},
                      {"param", nullptr},
                      {"code", "internal_error"}});
  }
}

}  // namespace qvl::cli
