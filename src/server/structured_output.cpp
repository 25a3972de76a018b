#include "server/structured_output.h"

#include "base/error.h"
#include "server/api_error.h"
#include "server/json_body.h"

namespace qvl::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const json* present(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void must_be(const std::string& param, const char* what) {
  fail_request(param, "'" + param + "' must be " + what, "invalid_type");
}

const std::string& string_at(const json& object, const char* key, const std::string& param) {
  const json* value = present(object, key);
  if (!value) fail_request(param, "missing required field '" + param + "'", "missing_field");
  if (!value->is_string()) must_be(param, "a string");
  return value->get_ref<const std::string&>();
}

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

void parse_response_format(const json& request, const ordered_json& ordered, ChatRequest& out) {
  const json* format = present(request, "response_format");
  if (!format) return;
  if (!format->is_object()) must_be("response_format", "an object");
  const std::string& type = string_at(*format, "type", "response_format.type");
  OutputConstraint& c = out.generation.constraint;
  if (type == "text") return;
  if (type == "json_object") {
    c.kind = OutputConstraint::Kind::kJsonObject;
    return;
  }
  if (type != "json_schema") {
    fail_request("response_format.type",
                 "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"",
                 "unsupported_value");
  }
  const json* spec = present(*format, "json_schema");
  if (!spec) {
    fail_request("response_format.json_schema",
                 "missing required field "
                 "'response_format.json_schema'",
                 "missing_field");
  }
  if (!spec->is_object()) must_be("response_format.json_schema", "an object");
  string_at(*spec, "name", "response_format.json_schema.name");
  if (const json* strict = present(*spec, "strict"); strict && !strict->is_boolean()) {
    must_be("response_format.json_schema.strict", "a boolean");
  }
  const json* schema = present(*spec, "schema");
  if (!schema) {  // OpenAI: no schema means any JSON object
    c.kind = OutputConstraint::Kind::kJsonObject;
    return;
  }
  if (!schema->is_object() && !schema->is_boolean()) {
    must_be("response_format.json_schema.schema", "a JSON Schema object");
  }
  c.kind = OutputConstraint::Kind::kJsonSchema;
  c.json_schema = ordered["response_format"]["json_schema"]["schema"].dump();
  try {
    validate_output_constraint(out.generation);
  } catch (const Error& e) {
    fail_request("response_format.json_schema.schema", e.what(), "unsupported_schema");
  }
}

void parse_tools(const json& request, const ordered_json& ordered, ChatRequest& out) {
  const json* tools = present(request, "tools");
  if (!tools) return;
  if (!tools->is_array()) must_be("tools", "an array");
  if (tools->size() > 128) fail_request("tools", "at most 128 tools", "limit_exceeded");
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string param = "tools[" + std::to_string(i) + "]";
    const json& tool = (*tools)[i];
    if (!tool.is_object()) must_be(param, "an object");
    if (string_at(tool, "type", param + ".type") != "function") {
      fail_request(param + ".type", "only tools of type \"function\" are supported",
                   "unsupported_value");
    }
    const json* function = present(tool, "function");
    if (!function || !function->is_object()) must_be(param + ".function", "an object");
    ToolDefinition def;
    def.name = string_at(*function, "name", param + ".function.name");
    if (!valid_function_name(def.name)) {
      fail_request(param + ".function.name",
                   "function names are 1 to 64 letters, digits, '_' or '-'");
    }
    if (const json* p = present(*function, "parameters")) {
      if (!p->is_object()) must_be(param + ".function.parameters", "a JSON Schema object");
      def.parameters = ordered["tools"][i]["function"]["parameters"].dump();
    }
    def.json = ordered["tools"][i].dump();
    out.generation.tools.push_back(std::move(def));
  }
}

void parse_tool_choice(const json& request, ChatRequest& out) {
  GenerationRequest& g = out.generation;
  const json* choice = present(request, "tool_choice");
  int max_calls = 8;
  if (const json* parallel = present(request, "parallel_tool_calls")) {
    if (!parallel->is_boolean()) must_be("parallel_tool_calls", "a boolean");
    if (!parallel->get<bool>()) max_calls = 1;
  }
  if (g.tools.empty()) {
    if (choice && !(choice->is_string() && choice->get<std::string>() == "none")) {
      fail_request("tool_choice", "'tool_choice' needs 'tools'");
    }
    return;
  }
  std::string mode = "auto";
  std::string name;
  if (choice && choice->is_string()) {
    mode = choice->get<std::string>();
    if (mode != "auto" && mode != "none" && mode != "required") {
      fail_request("tool_choice",
                   "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                   "{\"type\": \"function\", \"function\": {\"name\": ...}}",
                   "unsupported_value");
    }
  } else if (choice) {
    if (!choice->is_object()) must_be("tool_choice", "a string or an object");
    if (string_at(*choice, "type", "tool_choice.type") != "function") {
      fail_request("tool_choice.type", "'tool_choice.type' must be \"function\"",
                   "unsupported_value");
    }
    const json* function = present(*choice, "function");
    if (!function || !function->is_object()) must_be("tool_choice.function", "an object");
    name = string_at(*function, "name", "tool_choice.function.name");
    mode = "named";
  }
  if (mode == "none") {  // the model is not to call tools: they stay out of the prompt
    g.tools.clear();
    return;
  }
  out.parse_tool_calls = true;
  if (mode == "auto") return;
  if (g.constraint.kind != OutputConstraint::Kind::kNone) {
    fail_request("tool_choice",
                 "'tool_choice' \"" + mode + "\" cannot be combined with a JSON 'response_format'");
  }
  g.constraint.kind = OutputConstraint::Kind::kToolCalls;
  g.constraint.max_tool_calls = mode == "named" ? 1 : max_calls;
  if (mode == "named") g.constraint.tool_names = {name};
  try {
    validate_output_constraint(g);
  } catch (const Error& e) {
    const std::string what = e.what();
    const size_t dot = what.find(": ");
    // Errors in a tool's schema start with "tools[i].function.parameters: ".
    const std::string param = what.rfind("tools[", 0) == 0 && dot != std::string::npos
                                  ? what.substr(0, dot)
                                  : (mode == "named" ? "tool_choice.function.name" : "tools");
    fail_request(param, what, "unsupported_schema");
  }
}

}  // namespace

void parse_structured_output(std::string_view body, const json& request, ChatRequest& out) {
  bool value_arguments = false;
  for (const Message& m : out.generation.messages) {
    for (const ToolCall& call : m.tool_calls) value_arguments |= call.arguments_are_value;
  }
  if (!present(request, "response_format") && !present(request, "tools") &&
      !present(request, "tool_choice") && !value_arguments) {
    return;
  }
  // Already parsed once (depth-checked), so this cannot fail. Image bodies: lifted as the first
  // parse (a document's picture with a response_format is the common case).
  const ordered_json ordered = parse_json_lifting_long_strings<ordered_json>(body);
  if (value_arguments) {  // the template shows such arguments in the client's key order
    for (size_t i = 0; i < out.generation.messages.size(); ++i) {
      std::vector<ToolCall>& calls = out.generation.messages[i].tool_calls;
      for (size_t j = 0; j < calls.size(); ++j) {
        if (!calls[j].arguments_are_value) continue;
        calls[j].arguments =
            ordered["messages"][i]["tool_calls"][j]["function"]["arguments"].dump();
      }
    }
  }
  parse_response_format(request, ordered, out);
  parse_tools(request, ordered, out);
  parse_tool_choice(request, out);
}

void parse_message_tool_fields(const json& message, const std::string& param, Message& out) {
  if (const json* id = present(message, "tool_call_id")) {
    if (!id->is_string()) must_be(param + ".tool_call_id", "a string");
    out.tool_call_id = id->get<std::string>();
  }
  const json* calls = present(message, "tool_calls");
  if (!calls) return;
  if (out.role != "assistant") {
    fail_request(param + ".tool_calls", "only assistant messages have 'tool_calls'");
  }
  if (!calls->is_array()) must_be(param + ".tool_calls", "an array");
  for (size_t i = 0; i < calls->size(); ++i) {
    const std::string p = param + ".tool_calls[" + std::to_string(i) + "]";
    const json& call = (*calls)[i];
    if (!call.is_object()) must_be(p, "an object");
    const json* function = present(call, "function");
    if (!function || !function->is_object()) must_be(p + ".function", "an object");
    ToolCall tc;
    if (const json* id = present(call, "id"); id && id->is_string()) tc.id = id->get<std::string>();
    tc.name = string_at(*function, "name", p + ".function.name");
    const json* args = present(*function, "arguments");
    if (!args) {
      tc.arguments = "{}";
    } else if (args->is_string()) {
      tc.arguments = args->get<std::string>();  // as sent, like the template
    } else {
      tc.arguments = args->dump();  // in key order by parse_structured_output
      tc.arguments_are_value = true;
    }
    out.tool_calls.push_back(std::move(tc));
  }
}

}  // namespace qvl::server
