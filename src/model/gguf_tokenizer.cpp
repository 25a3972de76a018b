#include "model/gguf_tokenizer.h"

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qvl {
namespace {

// Token types as GGUF numbers them.
constexpr int64_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

// Qwen2/Qwen3's Split pattern (the "qwen2" pre-tokenizer).
constexpr const char* kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

}  // namespace

std::string gguf_tokenizer_json(const GgufFile& f) {
  // nlohmann::json keeps objects in a map; ordered_json would find each key by a linear search
  // (quadratic over a 151k-token vocabulary: 30 s instead of 0.2 s).
  using json = nlohmann::json;
  const std::string model = f.get_string("tokenizer.ggml.model");
  const std::string pre = f.find("tokenizer.ggml.pre") ? f.get_string("tokenizer.ggml.pre") : "";
  if (model != "gpt2" || pre != "qwen2") {
    fail(ErrorCode::kUnsupported, "the tokenizer of '" + f.path() + "' is " + model + "/" + pre +
                                      "; qvl reads Qwen's byte-level BPE (gpt2/qwen2)");
  }
  const std::vector<std::string>& tokens = f.get_strings("tokenizer.ggml.tokens");
  const std::vector<int64_t>& types = f.get_ints("tokenizer.ggml.token_type");
  if (types.size() != tokens.size()) {
    f.corrupt("tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " +
              std::to_string(tokens.size()) + " tokens");
  }
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    switch (types[id]) {
      case kNormal:
      case kUnknown:
      case kByte:
        vocab[tokens[id]] = id;
        break;
      case kControl:
      case kUserDefined:
        added.push_back({{"id", id},
                         {"content", tokens[id]},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", types[id] == kControl}});
        break;
      case kUnused:
        break;
      default:
        f.corrupt("token " + std::to_string(id) + " has the unknown type " +
                  std::to_string(types[id]));
    }
  }
  json merges = json::array();
  if (f.find("tokenizer.ggml.merges")) {
    for (const std::string& m : f.get_strings("tokenizer.ggml.merges")) merges.push_back(m);
  }
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", false},
                           {"use_regex", false}};
  json root = {{"version", "1.0"},
               {"added_tokens", std::move(added)},
               {"normalizer", {{"type", "NFC"}}},
               {"pre_tokenizer",
                {{"type", "Sequence"},
                 {"pretokenizers",
                  {{{"type", "Split"},
                    {"pattern", {{"Regex", kQwen2Pattern}}},
                    {"behavior", "Isolated"},
                    {"invert", false}},
                   byte_level}}}},
               {"decoder", byte_level},
               {"model",
                {{"type", "BPE"},
                 {"continuing_subword_prefix", ""},
                 {"end_of_word_suffix", ""},
                 {"byte_fallback", false},
                 {"ignore_merges", false},
                 {"vocab", std::move(vocab)},
                 {"merges", std::move(merges)}}}};
  return root.dump();
}

}  // namespace qvl
