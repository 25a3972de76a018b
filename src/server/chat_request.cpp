#include "server/chat_request.h"

#include <cmath>
#include <limits>

#include "server/api_error.h"
#include "server/data_uri.h"
#include "server/file_part.h"
#include "server/json_body.h"
#include "server/per_page_request.h"
#include "server/structured_output.h"
#include "server/video_part.h"

namespace qvl::server {
namespace {

using nlohmann::json;

const char* type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported type";
  }
}

// Present and not null.
const json* field(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void fail_type(const std::string& param, const char* expected, const json& value) {
  fail_request(param, "'" + param + "' must be " + expected + ", got " + type_name(value),
               "invalid_type");
}

std::string format_number(double value) {
  std::string text = std::to_string(value);
  while (text.size() > 1 && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

bool read_number(const json& object, const char* key, double lo, double hi, double& out) {
  const json* value = field(object, key);
  if (!value) return false;
  if (!value->is_number()) fail_type(key, "a number", *value);
  const double number = value->get<double>();
  if (!std::isfinite(number) || number < lo || number > hi) {
    fail_request(key, "'" + std::string(key) + "' must be between " + format_number(lo) + " and " +
                          format_number(hi));
  }
  out = number;
  return true;
}

bool read_float(const json& object, const char* key, double lo, double hi, float& out) {
  double number = 0;
  if (!read_number(object, key, lo, hi, number)) return false;
  out = static_cast<float>(number);
  return true;
}

bool read_integer(const json& object, const char* key, int64_t lo, int64_t hi, int64_t& out) {
  const json* value = field(object, key);
  if (!value) return false;
  const std::string range = "between " + std::to_string(lo) + " and " + std::to_string(hi);
  if (value->is_number_unsigned()) {
    const uint64_t number = value->get<uint64_t>();
    if (number > static_cast<uint64_t>(hi)) {
      fail_request(key, "'" + std::string(key) + "' must be an integer " + range);
    }
    out = static_cast<int64_t>(number);
  } else if (value->is_number_integer()) {
    out = value->get<int64_t>();
  } else {
    fail_type(key, ("an integer " + range).c_str(), *value);
  }
  if (out < lo || out > hi) fail_request(key, "'" + std::string(key) + "' must be " + range);
  return true;
}

bool read_bool(const json& object, const char* key, bool& out) {
  const json* value = field(object, key);
  if (!value) return false;
  if (!value->is_boolean()) fail_type(key, "a boolean", *value);
  out = value->get<bool>();
  return true;
}

std::vector<std::string> read_stop(const json& object, const RequestLimits& limits) {
  std::vector<std::string> stops;
  const json* value = field(object, "stop");
  if (!value) return stops;
  auto add = [&](const json& item, const std::string& param) {
    if (!item.is_string()) fail_type(param, "a string", item);
    const auto& text = item.get_ref<const std::string&>();
    if (text.size() > limits.max_stop_bytes) {
      fail_request(param, "stop sequences can be at most " + std::to_string(limits.max_stop_bytes) +
                              " bytes long");
    }
    if (!text.empty()) stops.push_back(text);
  };
  if (value->is_string()) {
    add(*value, "stop");
  } else if (value->is_array()) {
    if (value->size() > limits.max_stop_sequences) {
      fail_request("stop", "'stop' can hold at most " + std::to_string(limits.max_stop_sequences) +
                               " sequences");
    }
    for (size_t i = 0; i < value->size(); ++i) add((*value)[i], "stop[" + std::to_string(i) + "]");
  } else {
    fail_type("stop", "a string or an array of strings", *value);
  }
  return stops;
}

int64_t detail_budget(const json& image_url, const std::string& param, const ModelInfo& model,
                      const RequestLimits& limits) {
  const json* detail = field(image_url, "detail");
  const int64_t engine_default = model.image_max_tokens;
  if (!detail) return engine_default;
  if (!detail->is_string()) fail_type(param + ".detail", "a string", *detail);
  const auto& name = detail->get_ref<const std::string&>();
  if (name == "auto") return engine_default;
  if (name == "low") return limits.low_detail_max_tokens;
  if (name == "high") return limits.high_detail_max_tokens;
  fail_request(param + ".detail", "'detail' must be \"low\", \"high\" or \"auto\"");
}

class MessageParser {
 public:
  MessageParser(const ModelInfo& model, const RequestLimits& limits, ChatRequest& out)
      : model_(model), limits_(limits), out_(out) {}

  Message parse(const json& value, const std::string& param) {
    if (!value.is_object()) fail_type(param, "an object", value);
    Message message;
    const json* role = field(value, "role");
    if (!role)
      fail_request(param + ".role", "missing required field '" + param + ".role'", "missing_field");
    if (!role->is_string()) fail_type(param + ".role", "a string", *role);
    message.role = role->get<std::string>();
    if (message.role == "developer") message.role = "system";
    if (message.role != "system" && message.role != "user" && message.role != "assistant" &&
        message.role != "tool") {
      fail_request(param + ".role", "unknown role '" + message.role.substr(0, 32) +
                                        "'; use system, developer, user, assistant or tool");
    }
    const json* content = field(value, "content");
    const std::string content_param = param + ".content";
    if (!content) {
      // Assistant turns that only called tools have no content.
      if (message.role != "assistant") {
        fail_request(content_param, "missing required field '" + content_param + "'",
                     "missing_field");
      }
      message.parts.push_back(ContentPart{});
    } else if (content->is_string()) {
      message.parts.push_back(
          ContentPart{ContentPart::Kind::kText, content->get<std::string>(), -1});
    } else if (content->is_array()) {
      message.content_is_string = false;
      if (content->empty())
        fail_request(content_param, "'" + content_param + "' is an empty array");
      for (size_t i = 0; i < content->size(); ++i) {
        message.parts.push_back(
            parse_part((*content)[i], content_param + "[" + std::to_string(i) + "]"));
      }
    } else {
      fail_type(content_param, "a string or an array of content parts", *content);
    }
    parse_message_tool_fields(value, param, message);
    if (const json* reasoning = field(value, "reasoning_content")) {
      if (message.role != "assistant") {
        fail_request(param + ".reasoning_content",
                     "only assistant messages have 'reasoning_content'");
      }
      if (!reasoning->is_string()) fail_type(param + ".reasoning_content", "a string", *reasoning);
      message.reasoning_content = reasoning->get<std::string>();
    }
    return message;
  }

 private:
  ContentPart parse_part(const json& part, const std::string& param) {
    if (!part.is_object()) fail_type(param, "an object", part);
    const json* type = field(part, "type");
    if (!type)
      fail_request(param + ".type", "missing required field '" + param + ".type'", "missing_field");
    if (!type->is_string()) fail_type(param + ".type", "a string", *type);
    const auto& kind = type->get_ref<const std::string&>();
    if (kind == "text") {
      const json* text = field(part, "text");
      if (!text)
        fail_request(param + ".text", "missing required field '" + param + ".text'",
                     "missing_field");
      if (!text->is_string()) fail_type(param + ".text", "a string", *text);
      return ContentPart{ContentPart::Kind::kText, text->get<std::string>(), -1};
    }
    if (kind == "image_url") return parse_image(part, param);
    if (kind.rfind("video", 0) == 0) return parse_video_part(part, param, model_, limits_, out_);
    if (kind == "file") return parse_file_part(part, param, limits_, out_);
    fail_request(
        param + ".type",
        "unsupported content part type '" + kind.substr(0, 32) + "'; use \"text\" or \"image_url\"",
        "unsupported_value");
  }

  ContentPart parse_image(const json& part, const std::string& param) {
    const std::string image_param = param + ".image_url";
    const json* image_url = field(part, "image_url");
    if (!image_url)
      fail_request(image_param, "missing required field '" + image_param + "'", "missing_field");
    const json* url = image_url;
    int64_t budget = model_.image_max_tokens;
    if (image_url->is_object()) {
      url = field(*image_url, "url");
      if (!url) {
        fail_request(image_param + ".url", "missing required field '" + image_param + ".url'",
                     "missing_field");
      }
      budget = detail_budget(*image_url, image_param, model_, limits_);
    }
    const std::string url_param = image_url->is_object() ? image_param + ".url" : image_param;
    if (!url->is_string()) fail_type(url_param, "a string", *url);
    if (out_.generation.images.size() >= limits_.max_images) {
      fail_request(url_param,
                   "too many images: at most " + std::to_string(limits_.max_images) +
                       " per request (--max-images)",
                   "too_many_images");
    }
    const auto& text = url->get_ref<const std::string&>();
    ImageInput image;
    image.max_tokens = budget;
    const int index = static_cast<int>(out_.generation.images.size());
    if (text.rfind("data:", 0) == 0) {
      image.bytes = decode_data_uri(text, limits_.max_image_bytes, url_param);
    } else if (text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0) {
      if (!limits_.allow_remote_images) {
        fail_request(url_param,
                     "remote image URLs are disabled on this server; send the image inline as a "
                     "data URI (data:image/png;base64,...)",
                     "remote_images_disabled");
      }
      if (text.size() > 4096) fail_request(url_param, "image URL is longer than 4096 bytes");
      out_.remote_images.push_back(RemoteImage{index, text, url_param});
    } else if (limits_.allow_file_urls && text.rfind("file://", 0) == 0) {
      out_.remote_images.push_back(RemoteImage{index, text, url_param});
    } else {
      fail_request(url_param,
                   "image URL must be a data URI (data:image/png;base64,...) or http(s) URL",
                   "invalid_image_url");
    }
    out_.generation.images.push_back(std::move(image));
    return ContentPart{ContentPart::Kind::kImage, {}, index};
  }

  const ModelInfo& model_;
  const RequestLimits& limits_;
  ChatRequest& out_;
};

// Lowers per-image budgets so that their sum stays within the request's image token limit.
void share_image_budget(std::vector<ImageInput>& images, const ModelInfo& model,
                        const RequestLimits& limits) {
  if (images.empty()) return;
  const int64_t share = limits.max_total_image_tokens / static_cast<int64_t>(images.size());
  constexpr int64_t kSmallestUsefulBudget = 4;
  if (share < kSmallestUsefulBudget) {
    fail_request("messages",
                 "too many images for the request's image token budget of " +
                     std::to_string(limits.max_total_image_tokens) + "; send fewer images",
                 "too_many_images");
  }
  for (ImageInput& image : images) {
    if (image.max_tokens <= 0 || image.max_tokens > share) image.max_tokens = share;
    if (model.image_min_tokens > 0) {
      image.min_tokens = std::min(model.image_min_tokens, image.max_tokens);
    }
  }
}

// Depth of [ and { nesting, ignoring brackets inside strings; stops early past `limit`.
bool nesting_exceeds(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// Every top-level field of OpenAI's chat completion request that qvl knows. Implemented ones are
// parsed below; ignored ones change nothing here (the reason says why that is right); refused ones
// get a 400 naming the field until qvl implements them, so a client never silently gets less than
// it asked for. Fields that are not OpenAI's are ignored (clients send vendor extensions).
enum class Support { kImplemented, kIgnored, kRefused };
struct KnownField {
  const char* name;
  Support support;
  const char* reason;  // why ignored or refused
};
constexpr KnownField kKnownFields[] = {
    {"model", Support::kImplemented, ""},
    {"messages", Support::kImplemented, ""},
    {"stream", Support::kImplemented, ""},
    {"stream_options", Support::kImplemented, ""},
    {"n", Support::kImplemented, "only n=1"},
    {"max_tokens", Support::kImplemented, ""},
    {"max_completion_tokens", Support::kImplemented, ""},
    {"temperature", Support::kImplemented, ""},
    {"top_p", Support::kImplemented, ""},
    {"top_k", Support::kImplemented, "qvl's addition, as in vLLM"},
    {"min_p", Support::kImplemented, "qvl's addition, as in vLLM"},
    {"repetition_penalty", Support::kImplemented, "qvl's addition, as in vLLM"},
    {"draft_tokens", Support::kImplemented,
     "qvl's addition: speculative decoding's drafts per step for this request (0: off)"},
    {"presence_penalty", Support::kImplemented, ""},
    {"frequency_penalty", Support::kImplemented, ""},
    {"seed", Support::kImplemented, ""},
    {"stop", Support::kImplemented, ""},
    {"logprobs", Support::kImplemented, ""},
    {"top_logprobs", Support::kImplemented, ""},
    {"user", Support::kIgnored, "an end-user id for the provider's abuse monitoring"},
    {"safety_identifier", Support::kIgnored, "an end-user id for abuse monitoring"},
    {"store", Support::kIgnored, "qvl stores no completions"},
    {"metadata", Support::kIgnored, "tags for stored completions; qvl stores none"},
    {"service_tier", Support::kIgnored, "qvl has one tier"},
    {"prompt_cache_key", Support::kIgnored, "qvl reuses cached prompt prefixes automatically"},
    {"tools", Support::kImplemented, ""},
    {"tool_choice", Support::kImplemented, ""},
    {"parallel_tool_calls", Support::kImplemented, ""},
    {"functions", Support::kRefused, "the deprecated functions API; send 'tools'"},
    {"function_call", Support::kRefused, "the deprecated functions API; send 'tool_choice'"},
    {"response_format", Support::kImplemented, "json_object and json_schema (see README)"},
    {"logit_bias", Support::kRefused, "logit biases are not implemented"},
    {"audio", Support::kRefused, "the model produces text only"},
    {"modalities", Support::kRefused, "the model produces text only"},
    {"prediction", Support::kRefused, "predicted outputs are not implemented"},
    {"web_search_options", Support::kRefused, "qvl does not search the web"},
    {"reasoning_effort", Support::kRefused,
     "Qwen3-VL has no reasoning effort setting (Thinking models always reason, Instruct never)"},
    {"verbosity", Support::kRefused, "answer length is set by the prompt and max_tokens"},
};

// Values of refused fields that ask for nothing beyond the default, so clients that always send
// them keep working: an empty logit_bias, modalities ["text"].
bool asks_for_default(const std::string& name, const json& value) {
  if (name == "logit_bias") return value.is_object() && value.empty();
  if (name == "modalities") return value == json::array({"text"});
  return false;
}

void refuse_unimplemented_fields(const json& request) {
  for (const KnownField& known : kKnownFields) {
    if (known.support != Support::kRefused) continue;
    const json* value = field(request, known.name);
    if (!value || asks_for_default(known.name, *value)) continue;
    fail_request(known.name,
                 "'" + std::string(known.name) + "' is not supported by qvl: " + known.reason,
                 "unsupported_parameter");
  }
}

// logprobs (bool) and top_logprobs (0..20, needs logprobs): -1 when not asked for.
int64_t read_logprobs(const json& request) {
  bool logprobs = false;
  read_bool(request, "logprobs", logprobs);
  int64_t top = 0;
  const bool has_top = read_integer(request, "top_logprobs", 0, kMaxTopLogprobs, top);
  if (has_top && !logprobs) {
    fail_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  return logprobs ? top : -1;
}

}  // namespace

json parse_json_object(std::string_view body, int max_depth) {
  if (body.empty()) fail_request("", "request body is empty; send a JSON object", "invalid_json");
  if (nesting_exceeds(body, max_depth)) {
    fail_request("", "JSON is nested deeper than " + std::to_string(max_depth) + " levels",
                 "invalid_json");
  }
  json value;
  try {
    value = parse_json_lifting_long_strings(body);
  } catch (const json::exception& error) {
    fail_request("", std::string("request body is not valid JSON: ") + error.what(),
                 "invalid_json");
  }
  if (!value.is_object()) {
    fail_request("", std::string("request body must be a JSON object, got ") + type_name(value),
                 "invalid_json");
  }
  return value;
}

ChatRequest parse_chat_request(std::string_view body, const ModelInfo& model,
                               const RequestLimits& limits) {
  const json request = parse_json_object(body, limits.max_json_depth);
  refuse_unimplemented_fields(request);
  ChatRequest out;

  const json* model_name = field(request, "model");
  if (!model_name) fail_request("model", "missing required field 'model'", "missing_field");
  if (!model_name->is_string()) fail_type("model", "a string", *model_name);
  out.model = model_name->get<std::string>();

  const json* messages = field(request, "messages");
  if (!messages) fail_request("messages", "missing required field 'messages'", "missing_field");
  if (!messages->is_array()) fail_type("messages", "an array of messages", *messages);
  if (messages->empty()) fail_request("messages", "'messages' must contain at least one message");
  if (messages->size() > limits.max_messages) {
    fail_request("messages", "too many messages: at most " + std::to_string(limits.max_messages));
  }
  MessageParser parser(model, limits, out);
  for (size_t i = 0; i < messages->size(); ++i) {
    out.generation.messages.push_back(
        parser.parse((*messages)[i], "messages[" + std::to_string(i) + "]"));
  }
  share_image_budget(out.generation.images, model, limits);

  read_bool(request, "stream", out.stream);
  if (const json* options = field(request, "stream_options")) {
    if (!options->is_object()) fail_type("stream_options", "an object", *options);
    read_bool(*options, "include_usage", out.include_usage);
  }

  int64_t n = 1;
  if (read_integer(request, "n", 1, std::numeric_limits<int32_t>::max(), n) && n != 1) {
    fail_request("n", "only n=1 is supported; send separate requests for more choices",
                 "unsupported_value");
  }

  SamplingParams& sampling = out.generation.sampling;
  sampling = model.default_sampling;
  const int64_t max_tokens_limit = model.context_length > 0 ? model.context_length : (1 << 20);
  read_integer(request, "max_tokens", 1, max_tokens_limit, sampling.max_tokens);
  read_integer(request, "max_completion_tokens", 1, max_tokens_limit, sampling.max_tokens);
  read_float(request, "temperature", 0.0, 2.0, sampling.temperature);
  read_float(request, "top_p", 0.0, 1.0, sampling.top_p);
  if (sampling.top_p <= 0.0f) fail_request("top_p", "'top_p' must be greater than 0");
  int64_t top_k = sampling.top_k;
  if (read_integer(request, "top_k", -1, model.vocab_size > 0 ? model.vocab_size : (1 << 24),
                   top_k)) {
    sampling.top_k = top_k < 0 ? 0 : top_k;  // -1 means off, as in vLLM
  }
  read_float(request, "min_p", 0.0, 1.0, sampling.min_p);
  read_float(request, "presence_penalty", -2.0, 2.0, sampling.presence_penalty);
  read_float(request, "frequency_penalty", -2.0, 2.0, sampling.frequency_penalty);
  read_float(request, "repetition_penalty", 0.01, 10.0, sampling.repetition_penalty);
  int64_t seed = 0;
  if (read_integer(request, "seed", std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max(), seed)) {
    sampling.seed = static_cast<uint64_t>(seed);
  }
  sampling.stop = read_stop(request, limits);
  sampling.ignore_eos = false;
  parse_structured_output(body, request, out);
  out.generation.top_logprobs = read_logprobs(request);
  read_integer(request, "draft_tokens", 0, 64, out.generation.draft_tokens);
  const ReasoningOutput reasoning = read_reasoning_output(request);
  out.reasoning = model.thinking ? reasoning : ReasoningOutput::kRaw;
  out.per_page = read_per_page_mode(request, out);
  return out;
}

}  // namespace qvl::server
