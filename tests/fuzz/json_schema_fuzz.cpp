// libFuzzer target: any bytes as a JSON Schema (response_format json_schema, tool parameters).
// Compiling must give a grammar or throw qvl::Error naming what is unsupported; never crash,
// hang or recurse without bound. JSON is read as the server reads bodies (64 levels at most).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base/error.h"
#include "grammar/schema_compiler.h"
#include "tokenizer/json_depth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::ordered_json schema;
  try {
    schema = qvl::parse_json_within_depth<nlohmann::ordered_json>(text);
  } catch (const nlohmann::ordered_json::exception&) {
    return 0;
  } catch (const qvl::Error&) {
    return 0;
  }
  try {
    if (!qvl::grammar::compile_json_schema(schema)) std::abort();
  } catch (const qvl::Error&) {
  }
  try {
    if (!qvl::grammar::tool_call_grammar({{"f", schema}}, 2)) std::abort();
  } catch (const qvl::Error&) {
  }
  return 0;
}
