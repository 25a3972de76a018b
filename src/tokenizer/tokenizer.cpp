#include "tokenizer/tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer_state.h"
#include "tokenizer/utf8.h"

namespace qvl {

namespace {

using nlohmann::json;

[[noreturn]] void unsupported(const std::string& what) {
  fail(ErrorCode::kUnsupported, "tokenizer.json: unsupported " + what);
}

bool is_byte_level(const json& node) {
  return node.is_object() && node.value("type", "") == "ByteLevel" &&
         !node.value("use_regex", true) && !node.value("add_prefix_space", false);
}

// Reads normalizer and pre_tokenizer; we support what Qwen2/Qwen3 tokenizers use.
void read_pipeline(const json& root, Tokenizer::State& state) {
  const json& normalizer = root.value("normalizer", json());
  if (normalizer.is_object() && normalizer.value("type", "") == "NFC") {
    state.nfc = true;
  } else if (!normalizer.is_null()) {
    unsupported("normalizer " + normalizer.dump());
  }
  const json& pre = root.value("pre_tokenizer", json());
  const json steps =
      pre.value("type", "") == "Sequence" ? pre.value("pretokenizers", json()) : json::array({pre});
  bool saw_byte_level = false;
  for (const json& step : steps) {
    const std::string type = step.value("type", "");
    if (type == "Split" && !saw_byte_level && !state.pretokenizer &&
        step.value("behavior", "") == "Isolated" && !step.value("invert", false) &&
        step.contains("pattern") && step["pattern"].contains("Regex")) {
      state.split_pattern = step["pattern"]["Regex"].get<std::string>();
      state.pretokenizer.emplace(state.split_pattern);
    } else if (is_byte_level(step) && !saw_byte_level) {
      saw_byte_level = true;
    } else {
      unsupported("pre-tokenizer step " + step.dump());
    }
  }
  if (!saw_byte_level) unsupported("pre_tokenizer without a ByteLevel step");
  if (!is_byte_level(root.value("decoder", json()))) unsupported("decoder (want ByteLevel)");
}

void read_model(const json& model, Tokenizer::State& state) {
  if (model.value("type", "") != "BPE") unsupported("model type (want BPE)");
  if (model.value("byte_fallback", false) || model.value("ignore_merges", false) ||
      !model.value("continuing_subword_prefix", json("")).get<std::string>().empty() ||
      !model.value("end_of_word_suffix", json("")).get<std::string>().empty()) {
    unsupported("BPE options (byte_fallback/ignore_merges/prefixes)");
  }
  const ByteLevelAlphabet& alphabet = byte_level_alphabet();
  for (const auto& [spelling, id_json] : model.at("vocab").items()) {
    const int64_t id = id_json.get<int64_t>();
    if (id < 0 || id > (1 << 24)) fail(ErrorCode::kCorrupt, "tokenizer.json: bad token id");
    std::optional<std::string> bytes = alphabet.to_bytes(spelling);
    if (!bytes) fail(ErrorCode::kCorrupt, "tokenizer.json: token is not byte-level: " + spelling);
    if (state.id_bytes.size() <= static_cast<size_t>(id)) state.id_bytes.resize(id + 1);
    state.id_bytes[id] = std::move(*bytes);
    state.spelling_to_id.emplace(spelling, static_cast<int32_t>(id));
  }
  std::array<int32_t, 256>& byte_ids = state.byte_ids;
  for (int b = 0; b < 256; ++b) {
    auto it = state.spelling_to_id.find(alphabet.symbol(static_cast<uint8_t>(b)));
    byte_ids[b] = it == state.spelling_to_id.end() ? -1 : it->second;
  }
  std::vector<BpeModel::Merge>& merges = state.merges;
  const json& merges_json = model.at("merges");
  merges.reserve(merges_json.size());
  auto id_of = [&](const std::string& spelling) {
    auto it = state.spelling_to_id.find(spelling);
    if (it == state.spelling_to_id.end()) {
      fail(ErrorCode::kCorrupt, "tokenizer.json: merge uses unknown token " + spelling);
    }
    return it->second;
  };
  for (const json& m : merges_json) {
    std::string left, right;
    if (m.is_string()) {  // "a b"
      const std::string& text = m.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos) fail(ErrorCode::kCorrupt, "tokenizer.json: bad merge");
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else {  // ["a", "b"]
      left = m.at(0).get<std::string>();
      right = m.at(1).get<std::string>();
    }
    merges.push_back({id_of(left), id_of(right), id_of(left + right)});
  }
  state.bpe.emplace(byte_ids, merges);
}

void read_added_tokens(const json& root, Tokenizer::State& state) {
  std::vector<std::pair<std::string, int32_t>> matcher_tokens;
  for (const json& t : root.value("added_tokens", json::array())) {
    AddedToken token;
    token.id = t.at("id").get<int32_t>();
    token.content = t.at("content").get<std::string>();
    token.special = t.value("special", false);
    if (token.id < 0 || token.id > (1 << 24) || token.content.empty()) {
      fail(ErrorCode::kCorrupt, "tokenizer.json: bad added token " + t.dump());
    }
    if (state.id_bytes.size() <= static_cast<size_t>(token.id)) {
      state.id_bytes.resize(token.id + 1);
    }
    state.id_bytes[token.id] = token.content;
    matcher_tokens.emplace_back(token.content, token.id);
    state.added.push_back(std::move(token));
  }
  state.id_flags.assign(state.id_bytes.size(), 0);
  for (const AddedToken& t : state.added) {
    state.id_flags[t.id] = static_cast<uint8_t>(kTokenAdded | (t.special ? kTokenSpecial : 0));
  }
  state.added_matcher = AddedTokenMatcher(matcher_tokens);
}

}  // namespace

Tokenizer Tokenizer::from_json_text(std::string_view json_text) {
  json root;
  try {
    root = json::parse(json_text);
    auto state = std::make_shared<State>();
    read_pipeline(root, *state);
    read_model(root.at("model"), *state);
    read_added_tokens(root, *state);
    return Tokenizer(std::move(state));
  } catch (const json::exception& e) {
    fail(ErrorCode::kCorrupt, std::string("tokenizer.json is malformed: ") + e.what());
  }
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  try {
    return from_json_text(read_text_file(path));
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kCorrupt || e.code() == ErrorCode::kUnsupported) {
      throw Error(e.code(), path + ": " + e.what());
    }
    throw;
  }
}

std::string Tokenizer::json_path_in_model_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path path = fs::path(dir) / "tokenizer.json";
  if (!file_exists(path.string())) {
    fail(ErrorCode::kNotFound, "no tokenizer.json in model folder " + dir);
  }
  // A copied symlink becomes a tiny file whose text is the target path.
  std::error_code ec;
  if (fs::file_size(path, ec) < 1024 && !ec) {
    std::string text = read_text_file(path.string());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (!text.empty() && text.front() != '{' && text.find('\n') == std::string::npos) {
      path = path.parent_path() / text;
    }
  }
  return path.string();
}

Tokenizer Tokenizer::from_model_dir(const std::string& dir) {
  return from_file(json_path_in_model_dir(dir));
}

void Tokenizer::State::encode_segment(std::string_view text, std::vector<int32_t>& ids) const {
  if (text.empty()) return;
  std::string normalized;
  if (nfc) {
    normalized = nfc_normalize(text);
    text = normalized;
  }
  thread_local std::vector<std::string_view> pieces;
  pieces.clear();
  if (pretokenizer) {
    pretokenizer->split(text, pieces);
  } else {
    pieces.push_back(text);
  }
  for (std::string_view piece : pieces) bpe->encode_word(piece, ids);
}

void Tokenizer::encode_append(std::string_view text, std::vector<int32_t>& ids,
                              const EncodeOptions& options) const {
  std::string sanitized;
  if (!is_valid_utf8(text)) {
    sanitized = sanitize_utf8(text);
    text = sanitized;
  }
  const State& s = *state_;
  size_t pos = 0;
  while (options.parse_special_tokens && pos < text.size()) {
    const AddedTokenMatcher::Match m = s.added_matcher.find(text, pos);
    if (m.id < 0) break;
    s.encode_segment(text.substr(pos, m.begin - pos), ids);
    ids.push_back(m.id);
    pos = m.begin + m.length;
  }
  s.encode_segment(text.substr(pos), ids);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  encode_append(text, ids, options);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string out, pending;
  for (int32_t id : ids) {
    if (is_added_token(id)) {
      if (skip_special_tokens && is_special_token(id)) continue;
      // Bytes before an added token are decoded on their own, as Hugging Face does.
      append_utf8_lossy(pending, out, /*final=*/true);
      pending.clear();
      out += token_bytes(id);
    } else {
      pending += token_bytes(id);
    }
  }
  append_utf8_lossy(pending, out, /*final=*/true);
  return out;
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= state_->id_bytes.size()) return {};
  return state_->id_bytes[id];
}

bool Tokenizer::is_added_token(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < state_->id_flags.size() &&
         (state_->id_flags[id] & kTokenAdded);
}

bool Tokenizer::is_special_token(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < state_->id_flags.size() &&
         (state_->id_flags[id] & kTokenSpecial);
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  for (const AddedToken& t : state_->added) {
    if (t.content == token) return t.id;
  }
  const auto& spellings = state_->spellings();
  auto it = spellings.find(std::string(token));
  if (it == spellings.end()) return std::nullopt;
  return it->second;
}

int32_t Tokenizer::token_id_or_throw(std::string_view token) const {
  std::optional<int32_t> id = token_id(token);
  if (!id) fail(ErrorCode::kNotFound, "tokenizer has no token \"" + std::string(token) + "\"");
  return *id;
}

int32_t Tokenizer::vocab_size() const {
  return static_cast<int32_t>(state_->id_bytes.size());
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const {
  return state_->added;
}

}  // namespace qvl
