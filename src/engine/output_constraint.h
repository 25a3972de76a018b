// Constrained decoding in the engine: a request's OutputConstraint compiled to a grammar, and per
// sequence a TokenConstraint that masks each step's logits to the tokens the grammar allows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"
#include "qvl/engine.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

// The model's vocabulary as a token trie (built once, on the first constrained request): every
// id below the model's vocabulary size with the bytes it decodes to; special tokens and padding
// rows have none, so a constraint never allows them (the end-of-answer ids are handled apart).
class ConstraintVocabulary {
 public:
  ConstraintVocabulary(const Tokenizer& tokenizer, int64_t model_vocab);
  const grammar::TokenTrie& trie() const { return trie_; }
  const std::string& bytes(int64_t id) const { return bytes_[static_cast<size_t>(id)]; }
  int64_t size() const { return static_cast<int64_t>(bytes_.size()); }

 private:
  std::vector<std::string> bytes_;
  grammar::TokenTrie trie_;
};

// The grammar of request.constraint, or null for kNone. Throws Error(kInvalidArgument).
std::shared_ptr<const grammar::Grammar> compile_output_constraint(const GenerationRequest& request);

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const grammar::Grammar> grammar,
                  std::shared_ptr<const ConstraintVocabulary> vocabulary,
                  std::vector<int64_t> end_ids);

  // Sets to -inf every logit the grammar forbids now. `tokens_left` counts this step: near the
  // end only tokens after which the answer can still be completed in time are kept (the
  // completion distance is in bytes, and a token has at least one). End ids stay only when the
  // answer is complete. Never leaves nothing: with too small a budget the limit is dropped.
  void mask(float* logits, int64_t vocab, int64_t tokens_left);
  // A Thinking model's reasoning, before the constrained answer: free text, but it may not end
  // the answer, and it is closed (only `think_end` allowed) once just enough of the budget is
  // left for the constrained answer to still fit. `tokens_left` counts this step.
  void mask_reasoning(float* logits, int64_t vocab, int64_t tokens_left, int64_t think_end);
  // Whether mask() would keep `token` now (an end id: when the answer is complete). Cheap: walks
  // only the token's bytes.
  bool allows(int64_t token, int64_t tokens_left);
  // Advances over a sampled token (not an end id). Throws kInternal if the grammar rejects it.
  void accept(int64_t token);
  // Complete, and nothing may follow: the answer is over.
  bool finished() const { return matcher_.finished(); }
  // Jump-forward drafts: the bytes that are the grammar's only continuation from here (up to
  // where a choice comes, or the answer may end), spelt as the tokenizer spells them, at most
  // `max` tokens appended to `draft`. Guesses only: the model's own tokens are verified against
  // them, so another spelling costs speed, never the answer.
  void forced_draft(const Tokenizer& tokenizer, int64_t max, std::vector<int64_t>& draft) const;
  double mask_ms() const { return mask_ms_; }

 private:
  grammar::Matcher matcher_;
  std::shared_ptr<const ConstraintVocabulary> vocabulary_;
  std::vector<int64_t> end_ids_;
  std::vector<uint64_t> bits_;
  std::vector<float> saved_;
  double mask_ms_ = 0;
};

}  // namespace qvl
