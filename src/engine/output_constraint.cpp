#include "engine/output_constraint.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/timer.h"
#include "grammar/schema_compiler.h"

namespace qvl {
namespace {

using nlohmann::ordered_json;

ordered_json parse_schema(const std::string& text, const std::string& what) {
  try {
    return ordered_json::parse(text);
  } catch (const ordered_json::exception& e) {
    fail(ErrorCode::kInvalidArgument, what + " is not valid JSON: " + e.what());
  }
}

}  // namespace

ConstraintVocabulary::ConstraintVocabulary(const Tokenizer& tokenizer, int64_t model_vocab)
    : bytes_([&] {
        std::vector<std::string> bytes(static_cast<size_t>(model_vocab));
        const int32_t known = std::min<int64_t>(tokenizer.vocab_size(), model_vocab);
        for (int32_t id = 0; id < known; ++id) {
          if (!tokenizer.is_special_token(id)) bytes[id] = std::string(tokenizer.token_bytes(id));
        }
        return bytes;
      }()),
      trie_(bytes_) {}

std::shared_ptr<const grammar::Grammar> compile_output_constraint(
    const GenerationRequest& request) {
  const OutputConstraint& c = request.constraint;
  switch (c.kind) {
    case OutputConstraint::Kind::kNone:
      return nullptr;
    case OutputConstraint::Kind::kJsonObject:
      return grammar::json_object_grammar();
    case OutputConstraint::Kind::kJsonSchema:
      return grammar::compile_json_schema(parse_schema(c.json_schema, "the JSON schema"));
    case OutputConstraint::Kind::kToolCalls: {
      if (request.tools.empty()) {
        fail(ErrorCode::kInvalidArgument, "tool calls are required but no tools are given");
      }
      for (const std::string& name : c.tool_names) {
        if (std::none_of(request.tools.begin(), request.tools.end(),
                         [&](const ToolDefinition& t) { return t.name == name; })) {
          fail(ErrorCode::kInvalidArgument,
               "tool_choice names '" + name + "', which is not among the tools");
        }
      }
      std::vector<grammar::ToolSchema> tools;
      for (const ToolDefinition& t : request.tools) {
        if (!c.tool_names.empty() &&
            std::find(c.tool_names.begin(), c.tool_names.end(), t.name) == c.tool_names.end()) {
          continue;
        }
        grammar::ToolSchema tool;
        tool.name = t.name;
        if (!t.parameters.empty()) {
          tool.parameters = parse_schema(t.parameters, "the parameters of tool " + t.name);
        }
        tools.push_back(std::move(tool));
      }
      return grammar::tool_call_grammar(tools, std::max(c.max_tool_calls, 1));
    }
  }
  return nullptr;
}

void validate_output_constraint(const GenerationRequest& request) {
  (void)compile_output_constraint(request);
}

TokenConstraint::TokenConstraint(std::shared_ptr<const grammar::Grammar> grammar,
                                 std::shared_ptr<const ConstraintVocabulary> vocabulary,
                                 std::vector<int64_t> end_ids)
    : matcher_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      end_ids_(std::move(end_ids)) {}

void TokenConstraint::mask(float* logits, int64_t vocab, int64_t tokens_left) {
  const Timer timer;
  const grammar::TokenTrie& trie = vocabulary_->trie();
  matcher_.allowed_tokens(trie, std::max<int64_t>(tokens_left - 1, 0), bits_);
  const bool complete = matcher_.accepting();
  if (!complete && std::all_of(bits_.begin(), bits_.end(), [](uint64_t w) { return w == 0; })) {
    matcher_.allowed_tokens(trie, grammar::kUnreachable, bits_);  // cannot finish in time anyway
  }
  saved_.clear();
  for (int64_t id : end_ids_) saved_.push_back(id >= 0 && id < vocab ? logits[id] : 0.0f);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t covered = std::min<int64_t>(vocab, static_cast<int64_t>(trie.vocab_size()));
  for (int64_t w = 0; w * 64 < covered; ++w) {
    const uint64_t word = bits_[static_cast<size_t>(w)];
    if (word == ~uint64_t{0}) continue;
    const int64_t end = std::min<int64_t>(covered, (w + 1) * 64);
    for (int64_t i = w * 64; i < end; ++i) {
      if (!((word >> (i - w * 64)) & 1)) logits[i] = kNegInf;
    }
  }
  std::fill(logits + covered, logits + vocab, kNegInf);
  if (complete) {
    for (size_t k = 0; k < end_ids_.size(); ++k) {
      if (end_ids_[k] >= 0 && end_ids_[k] < vocab) logits[end_ids_[k]] = saved_[k];
    }
  }
  mask_ms_ += timer.millis();
}

void TokenConstraint::mask_reasoning(float* logits, int64_t vocab, int64_t tokens_left,
                                     int64_t think_end) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // The answer then needs, at worst, one token per byte of its shortest completion and the end.
  const int64_t answer_tokens = matcher_.distance() + 1;
  if (tokens_left - 1 <= answer_tokens && think_end >= 0 && think_end < vocab) {
    const float kept = logits[think_end];
    std::fill(logits, logits + vocab, kNegInf);
    logits[think_end] = kept;
    return;
  }
  for (int64_t id : end_ids_) {
    if (id >= 0 && id < vocab) logits[id] = kNegInf;
  }
}

bool TokenConstraint::allows(int64_t token, int64_t tokens_left) {
  const Timer timer;
  bool allowed = false;
  if (std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end()) {
    allowed = matcher_.accepting();
  } else if (token >= 0 && token < vocabulary_->size() && !vocabulary_->bytes(token).empty()) {
    // As mask() does: the token's bytes, then a match still within reach of the budget.
    grammar::MatchState state = matcher_.state(), next;
    allowed = true;
    for (char c : vocabulary_->bytes(token)) {
      if (!matcher_.step(state, static_cast<uint8_t>(c), next)) {
        allowed = false;
        break;
      }
      std::swap(state, next);
    }
    allowed = allowed && matcher_.distance(state) <= std::max<int64_t>(tokens_left - 1, 0);
  }
  mask_ms_ += timer.millis();
  return allowed;
}

void TokenConstraint::forced_draft(const Tokenizer& tokenizer, int64_t max,
                                   std::vector<int64_t>& draft) const {
  if (max <= 0) return;
  // A token spells a few bytes; more forced bytes than this would not fit the draft anyway.
  const size_t max_bytes = static_cast<size_t>(8 * max);
  std::string forced;
  grammar::MatchState state = matcher_.state(), next, only;
  while (forced.size() < max_bytes && !matcher_.accepting(state)) {
    int allowed = 0;
    uint8_t byte = 0;
    for (int b = 0; b < 256 && allowed < 2; ++b) {
      if (matcher_.step(state, static_cast<uint8_t>(b), next)) {
        ++allowed;
        byte = static_cast<uint8_t>(b);
        std::swap(only, next);
      }
    }
    if (allowed != 1) break;
    forced.push_back(static_cast<char>(byte));
    std::swap(state, only);
  }
  // Whole UTF-8 characters only: a last character cut by the byte limit goes.
  size_t lead = forced.size();
  while (lead > 0 && (static_cast<uint8_t>(forced[lead - 1]) & 0xC0) == 0x80) --lead;
  if (lead > 0) {
    const uint8_t c = static_cast<uint8_t>(forced[--lead]);
    const size_t length = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (lead + length > forced.size()) forced.resize(lead);
  }
  if (forced.empty()) return;
  EncodeOptions plain;
  plain.parse_special_tokens = false;
  for (int32_t id : tokenizer.encode(forced, plain)) {
    if (static_cast<int64_t>(draft.size()) >= max) break;
    draft.push_back(id);
  }
}

void TokenConstraint::accept(int64_t token) {
  if (token < 0 || token >= vocabulary_->size() || vocabulary_->bytes(token).empty() ||
      !matcher_.advance(vocabulary_->bytes(token))) {
    fail(ErrorCode::kInternal,
         "constrained decoding: token " + std::to_string(token) + " is not allowed by the grammar");
  }
}

}  // namespace qvl
