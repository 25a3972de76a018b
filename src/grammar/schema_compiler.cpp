#include "grammar/schema_compiler.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/error.h"

namespace qvl::grammar {
namespace {

using nlohmann::ordered_json;

constexpr size_t kMaxNodes = 20000;

// Keywords that only describe: they constrain nothing, so they are accepted and skipped.
const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {"title",    "description", "default",  "examples",
                                          "$schema",  "$id",         "$comment", "deprecated",
                                          "readOnly", "writeOnly",   "$defs",    "definitions",
                                          "strict",   "$anchor",     "example",  "discriminator"};
  return k;
}

const std::set<std::string>& supported() {
  static const std::set<std::string> k = {
      "type",     "properties", "required", "additionalProperties",
      "items",    "minItems",   "maxItems", "enum",
      "const",    "anyOf",      "allOf",    "$ref",
      "nullable", "format"};
  return k;
}

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  fail(ErrorCode::kInvalidArgument, what + " (at " + (where.empty() ? "/" : where) + ")");
}

std::string escape_pointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string unescape_pointer(const std::string& token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size()) {
      out += token[i + 1] == '1' ? '/' : '~';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

Node node_of(NodeKind kind) {
  Node n;
  n.kind = kind;
  return n;
}

Node number_node(bool integer) {
  Node n = node_of(NodeKind::kNumber);
  n.integer = integer;
  return n;
}

Node literals(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  Node n;
  n.kind = NodeKind::kLiterals;
  n.literals = std::move(values);
  return n;
}

bool matches_type(const ordered_json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    return v.is_number_integer() || v.is_number_unsigned() ||
           (v.is_number_float() && v.get<double>() == static_cast<double>(v.get<int64_t>()));
  }
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  return false;
}

class Compiler {
 public:
  explicit Compiler(const ordered_json& root) : root_(&root) {}

  // Compiles `s` as the root its local $refs point into.
  uint32_t schema_with_root(const ordered_json& s) {
    root_ = &s;
    refs_.clear();
    return schema(s, "");
  }

  Node& node(uint32_t id) { return g_.nodes[id]; }

  std::shared_ptr<const Grammar> finish(uint32_t root) {
    g_.root = root;
    g_.finalize();
    return std::make_shared<const Grammar>(std::move(g_));
  }

  uint32_t add(Node n) {
    if (g_.nodes.size() >= kMaxNodes) {
      fail(ErrorCode::kInvalidArgument, "the schema is too large (more than 20000 parts)");
    }
    return g_.add(std::move(n));
  }

  uint32_t any_value() {
    if (any_value_ != kNoNode) return any_value_;
    any_value_ = add(node_of(NodeKind::kAnyOf));
    const uint32_t string = add(node_of(NodeKind::kString));
    Node object;
    object.kind = NodeKind::kObject;
    object.free_object = true;
    object.free_key = string;
    object.free_value = any_value_;
    const uint32_t obj = add(std::move(object));
    Node array;
    array.kind = NodeKind::kArray;
    array.item = any_value_;
    const uint32_t arr = add(std::move(array));
    const uint32_t number = add(node_of(NodeKind::kNumber));
    const uint32_t words = add(literals({"true", "false", "null"}));
    g_.nodes[any_value_].children = {obj, arr, string, number, words};
    return any_value_;
  }

  uint32_t free_object(uint32_t value) {
    Node object;
    object.kind = NodeKind::kObject;
    object.free_object = true;
    object.free_key = add(node_of(NodeKind::kString));
    object.free_value = value;
    return add(std::move(object));
  }

  uint32_t schema(const ordered_json& s, const std::string& where, int depth = 0) {
    if (depth > 64) bad(where, "the schema is nested too deeply");
    if (s.is_boolean()) {
      if (!s.get<bool>()) bad(where, "the schema 'false' admits no value");
      return any_value();
    }
    if (!s.is_object()) bad(where, "a schema must be an object or a boolean");
    for (const auto& [key, value] : s.items()) {
      if (!supported().count(key) && !annotations().count(key)) {
        bad(where, "unsupported JSON Schema keyword '" + key + "'");
      }
    }
    if (s.contains("$ref")) {
      for (const auto& [key, value] : s.items()) {
        if (key != "$ref" && supported().count(key)) {
          bad(where, "'$ref' next to '" + key + "' is not supported; put them in an allOf");
        }
      }
      return reference(s["$ref"], where, depth);
    }
    if (s.contains("allOf")) {
      const ordered_json& all = s["allOf"];
      if (!all.is_array() || all.size() != 1) {
        bad(where + "/allOf", "only an 'allOf' with exactly one schema is supported");
      }
      for (const auto& [key, value] : s.items()) {
        if (key != "allOf" && supported().count(key)) {
          bad(where, "'allOf' next to '" + key + "' is not supported");
        }
      }
      return schema(all[0], where + "/allOf/0", depth + 1);
    }
    std::vector<std::string> types = type_list(s, where);
    if (s.contains("nullable")) {
      if (!s["nullable"].is_boolean()) bad(where + "/nullable", "'nullable' must be a boolean");
      if (s["nullable"].get<bool>() && !types.empty() &&
          std::find(types.begin(), types.end(), "null") == types.end()) {
        types.push_back("null");
      }
    }
    if (s.contains("enum") || s.contains("const")) return enumeration(s, types, where);
    if (s.contains("anyOf")) {
      const ordered_json& any = s["anyOf"];
      if (!any.is_array() || any.empty())
        bad(where + "/anyOf", "'anyOf' must be a non-empty array");
      for (const auto& [key, value] : s.items()) {
        if (key != "anyOf" && key != "nullable" && supported().count(key)) {
          bad(where, "'anyOf' next to '" + key + "' is not supported; move it into each branch");
        }
      }
      Node alt = node_of(NodeKind::kAnyOf);
      for (size_t i = 0; i < any.size(); ++i) {
        alt.children.push_back(schema(any[i], where + "/anyOf/" + std::to_string(i), depth + 1));
      }
      if (std::find(types.begin(), types.end(), "null") != types.end()) {
        alt.children.push_back(add(literals({"null"})));
      }
      return add(std::move(alt));
    }
    if (types.empty()) {  // infer from the keywords present, or any value
      if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required"))
        types = {"object"};
      else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems"))
        types = {"array"};
      else if (s.contains("format"))
        types = {"string"};
      else
        return any_value();
    }
    check_keywords_fit(s, types, where);
    Node alt = node_of(NodeKind::kAnyOf);
    for (const std::string& t : types) alt.children.push_back(typed(s, t, where, depth));
    if (alt.children.size() == 1) return alt.children[0];
    return add(std::move(alt));
  }

 private:
  std::vector<std::string> type_list(const ordered_json& s, const std::string& where) {
    std::vector<std::string> types;
    if (!s.contains("type")) return types;
    const ordered_json& t = s["type"];
    auto one = [&](const ordered_json& v) {
      static const std::set<std::string> known = {"string", "number", "integer", "boolean",
                                                  "null",   "object", "array"};
      if (!v.is_string() || !known.count(v.get<std::string>())) {
        bad(where + "/type", "unknown type " + v.dump());
      }
      if (std::find(types.begin(), types.end(), v.get<std::string>()) == types.end())
        types.push_back(v.get<std::string>());
    };
    if (t.is_array()) {
      if (t.empty()) bad(where + "/type", "'type' must not be an empty array");
      for (const auto& v : t) one(v);
    } else {
      one(t);
    }
    return types;
  }

  // Keywords of one type next to a type list without it would be dropped: refuse that.
  void check_keywords_fit(const ordered_json& s, const std::vector<std::string>& types,
                          const std::string& where) {
    auto has = [&](const char* t) {
      return std::find(types.begin(), types.end(), t) != types.end();
    };
    for (const char* k : {"properties", "required", "additionalProperties"}) {
      if (s.contains(k) && !has("object")) bad(where, std::string("'") + k + "' needs type object");
    }
    for (const char* k : {"items", "minItems", "maxItems"}) {
      if (s.contains(k) && !has("array")) bad(where, std::string("'") + k + "' needs type array");
    }
    if (s.contains("format") && !has("string")) bad(where, "'format' needs type string");
  }

  uint32_t enumeration(const ordered_json& s, const std::vector<std::string>& types,
                       const std::string& where) {
    std::vector<std::string> values;
    auto take = [&](const ordered_json& v) {
      if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string& t) {
            return matches_type(v, t);
          })) {
        return;
      }
      values.push_back(v.dump());
    };
    if (s.contains("const")) {
      take(s["const"]);
    } else {
      if (!s["enum"].is_array()) bad(where + "/enum", "'enum' must be an array");
      for (const auto& v : s["enum"]) take(v);
    }
    if (values.empty()) bad(where, "'enum'/'const' leaves no value of the allowed types");
    return add(literals(std::move(values)));
  }

  int32_t count(const ordered_json& s, const char* key, const std::string& where) {
    if (!s.contains(key)) return -1;
    const ordered_json& v = s[key];
    if (!v.is_number_integer() && !v.is_number_unsigned()) {
      bad(where + "/" + key, std::string("'") + key + "' must be a non-negative integer");
    }
    const int64_t n = v.get<int64_t>();
    if (n < 0 || n > 100000) bad(where + "/" + key, std::string("'") + key + "' is out of range");
    return static_cast<int32_t>(n);
  }

  uint32_t typed(const ordered_json& s, const std::string& type, const std::string& where,
                 int depth) {
    if (type == "null") return add(literals({"null"}));
    if (type == "boolean") return add(literals({"true", "false"}));
    if (type == "number" || type == "integer") {
      return add(number_node(type == "integer"));
    }
    if (type == "string") {
      Node n = node_of(NodeKind::kString);
      if (s.contains("format")) {
        const ordered_json& f = s["format"];
        const std::string name = f.is_string() ? f.get<std::string>() : f.dump();
        if (name == "date") {
          n.format = StringFormat::kDate;
        } else if (name == "time") {
          n.format = StringFormat::kTime;
        } else if (name == "date-time") {
          n.format = StringFormat::kDateTime;
        } else if (name == "uuid") {
          n.format = StringFormat::kUuid;
        } else {
          bad(where + "/format",
              "unsupported string format '" + name + "' (supported: date, time, date-time, uuid)");
        }
      }
      return add(std::move(n));
    }
    if (type == "array") {
      Node n = node_of(NodeKind::kArray);
      n.min_items = std::max(count(s, "minItems", where), 0);
      n.max_items = count(s, "maxItems", where);
      if (n.max_items >= 0 && n.max_items < n.min_items) {
        bad(where, "'maxItems' is smaller than 'minItems'");
      }
      n.item = s.contains("items") ? schema(s["items"], where + "/items", depth + 1) : any_value();
      return add(std::move(n));
    }
    return object(s, where, depth);
  }

  uint32_t object(const ordered_json& s, const std::string& where, int depth) {
    const ordered_json* extra =
        s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    if (extra && !extra->is_boolean() && !extra->is_object()) {
      bad(where + "/additionalProperties", "'additionalProperties' must be a boolean or a schema");
    }
    const bool has_properties = s.contains("properties") && !s["properties"].empty();
    if (s.contains("properties") && !s["properties"].is_object()) {
      bad(where + "/properties", "'properties' must be an object");
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) bad(where + "/required", "'required' must be an array");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) bad(where + "/required", "'required' must list strings");
        if (!has_properties || !s["properties"].contains(r.get<std::string>())) {
          bad(where + "/required",
              "required property '" + r.get<std::string>() + "' is not in 'properties'");
        }
        required.insert(r.get<std::string>());
      }
    }
    if (!has_properties) {
      if (extra && extra->is_boolean() && !extra->get<bool>()) {
        return add(literals({"{}"}));  // no property may appear
      }
      const uint32_t value = extra && extra->is_object()
                                 ? schema(*extra, where + "/additionalProperties", depth + 1)
                                 : any_value();
      return free_object(value);
    }
    const ordered_json& props = s["properties"];
    if (props.size() > 4096) bad(where + "/properties", "too many properties (at most 4096)");
    const uint32_t id = add(node_of(NodeKind::kObject));
    std::vector<Property> list;
    std::vector<std::pair<std::string, uint16_t>> keys;
    for (const auto& [name, sub] : props.items()) {
      Property p;
      p.key = ordered_json(name).dump();
      p.required = required.count(name) > 0;
      p.value = schema(sub, where + "/properties/" + escape_pointer(name), depth + 1);
      keys.emplace_back(p.key, static_cast<uint16_t>(list.size()));
      list.push_back(std::move(p));
    }
    std::sort(keys.begin(), keys.end());
    Node key_node = node_of(NodeKind::kLiterals);
    for (auto& [text, tag] : keys) {
      key_node.literals.push_back(text);
      key_node.tags.push_back(tag);
    }
    key_node.key_owner = id;
    const uint32_t key_id = add(std::move(key_node));
    g_.nodes[id].properties = std::move(list);
    g_.nodes[id].keys = key_id;
    return id;
  }

  uint32_t reference(const ordered_json& ref, const std::string& where, int depth) {
    if (!ref.is_string()) bad(where + "/$ref", "'$ref' must be a string");
    const std::string text = ref.get<std::string>();
    if (text.empty() || text[0] != '#') {
      bad(where + "/$ref",
          "only local references ('#/$defs/...') are supported, got '" + text.substr(0, 64) + "'");
    }
    if (const auto it = refs_.find(text); it != refs_.end()) return it->second;
    const ordered_json* target = root_;
    std::string path = text.substr(1);
    size_t pos = 0;
    while (pos < path.size()) {
      if (path[pos] != '/') bad(where + "/$ref", "bad JSON pointer '" + text.substr(0, 64) + "'");
      const size_t next = path.find('/', pos + 1);
      const std::string token = unescape_pointer(
          path.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1));
      if (!target->is_object() || !target->contains(token)) {
        bad(where + "/$ref", "'$ref' points nowhere: '" + text.substr(0, 64) + "'");
      }
      target = &(*target)[token];
      pos = next == std::string::npos ? path.size() : next;
    }
    // A placeholder first, so recursive references find it.
    const uint32_t id = add(node_of(NodeKind::kAnyOf));
    refs_[text] = id;
    const uint32_t body = schema(*target, text.substr(1), depth + 1);
    g_.nodes[id].children = {body};
    return id;
  }

  const ordered_json* root_;
  Grammar g_;
  uint32_t any_value_ = kNoNode;
  std::map<std::string, uint32_t> refs_;
};

}  // namespace

std::shared_ptr<const Grammar> compile_json_schema(const ordered_json& schema) {
  Compiler c(schema);
  const uint32_t root = c.schema(schema, "");
  return c.finish(root);
}

std::shared_ptr<const Grammar> json_object_grammar() {
  const ordered_json empty = ordered_json::object();
  Compiler c(empty);
  return c.finish(c.free_object(c.any_value()));
}

std::shared_ptr<const Grammar> tool_call_grammar(const std::vector<ToolSchema>& tools,
                                                 int max_calls) {
  QVL_CHECK(!tools.empty() && max_calls >= 1);
  Node calls = node_of(NodeKind::kAnyOf);
  // One grammar holds every tool; each parameters schema is the root of its own $refs.
  const ordered_json empty = ordered_json::object();
  Compiler c(empty);
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSchema& tool = tools[i];
    uint32_t args = kNoNode;
    try {
      args = tool.parameters.is_null() ? c.free_object(c.any_value())
                                       : c.schema_with_root(tool.parameters);
    } catch (const Error& e) {
      fail(e.code(), "tools[" + std::to_string(i) + "].function.parameters: " + e.what());
    }
    const uint32_t obj = c.add(node_of(NodeKind::kObject));
    Node keys = node_of(NodeKind::kLiterals);
    keys.literals = {"\"arguments\"", "\"name\""};
    keys.tags = {1, 0};
    keys.key_owner = obj;
    const uint32_t key_id = c.add(std::move(keys));
    const uint32_t name = c.add(literals({ordered_json(tool.name).dump()}));
    Node& o = c.node(obj);
    o.properties = {Property{"\"name\"", name, true}, Property{"\"arguments\"", args, true}};
    o.keys = key_id;
    calls.children.push_back(obj);
  }
  const uint32_t call = c.add(std::move(calls));
  Node wrapper = node_of(NodeKind::kSequence);
  wrapper.children = {c.add(literals({"<tool_call>\n"})), call,
                      c.add(literals({"\n</tool_call>"}))};
  Node repeat = node_of(NodeKind::kRepeat);
  repeat.item = c.add(std::move(wrapper));
  repeat.separator = c.add(literals({"\n"}));
  repeat.min_items = 1;
  repeat.max_items = max_calls;
  return c.finish(c.add(std::move(repeat)));
}

}  // namespace qvl::grammar
