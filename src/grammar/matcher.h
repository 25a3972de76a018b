// Runs a Grammar byte by byte. The state is a small set of stacks of frames (one frame per open
// node: an object waiting for its next key, a string inside its content, ...); several stacks
// exist only while anyOf alternatives or a literal and its longer extension are both still
// possible. Frames are plain data, so a state is copied cheaply while walking the token trie.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_trie.h"

namespace qvl::grammar {

struct Frame {
  uint32_t node = kNoNode;
  int32_t a = 0, b = 0, c = 0;           // per kind: positions, counts, the property being read
  uint16_t tag_lo = 0, tag_hi = 0xFFFF;  // literal keys: allowed property indices
  uint8_t stage = 0;
  uint8_t ws = 0;  // whitespace bytes in the current run
  bool operator==(const Frame&) const = default;
};

// A set of stacks, stored flat so that copying reuses memory.
class MatchState {
 public:
  size_t stacks() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  const Frame* stack_begin(size_t k) const { return frames_.data() + (k ? ends_[k - 1] : 0); }
  const Frame* stack_end(size_t k) const { return frames_.data() + ends_[k]; }
  void clear() {
    frames_.clear();
    ends_.clear();
  }
  // Adds a stack unless an equal one is there (or the set is full).
  void add(const std::vector<Frame>& stack);

 private:
  static constexpr size_t kMaxStacks = 64;
  std::vector<Frame> frames_;
  std::vector<uint32_t> ends_;
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  // Consumes bytes; returns false and leaves the state unchanged if the grammar rejects them.
  bool advance(std::string_view bytes);
  // The output so far is a complete match (the end of output may come now).
  bool accepting() const { return accepting(state_); }
  // Complete and no byte can follow.
  bool finished() const;
  // Fewest bytes that complete a match from here (0 when accepting).
  int64_t distance() const { return distance(state_); }

  // Marks in `bits` (one bit per token id, cleared first) every token of `trie` whose bytes the
  // grammar accepts from the current state and after which a match can still be completed in
  // at most `max_distance` bytes. Walks the trie with the state, skipping every subtree whose
  // prefix is rejected; inside free string content, plain tokens come from a precomputed set.
  void allowed_tokens(const TokenTrie& trie, int64_t max_distance,
                      std::vector<uint64_t>& bits) const;

  const MatchState& state() const { return state_; }
  const Grammar& grammar() const { return *grammar_; }

  // The byte-level step the above are made of: `to` = `from` after `byte`. Returns !to.empty().
  bool step(const MatchState& from, uint8_t byte, MatchState& to) const;
  bool accepting(const MatchState& state) const;
  int64_t distance(const MatchState& state) const;
  // Every stack is inside the content of a string without format, between characters.
  bool in_plain_string(const MatchState& state) const;

 private:
  using Stack = std::vector<Frame>;
  void feed(Stack& s, uint8_t c, MatchState& out) const;
  void enter(Stack& s, uint32_t node, uint8_t c, MatchState& out) const;
  void expand(Stack& s, uint32_t node, MatchState& out) const;
  void pop(Stack& s) const;
  void child_done(Frame& parent, const Frame& child) const;
  bool finishable(const Frame& f) const;
  bool accepting_stack(Stack s) const;
  int64_t stack_distance(const Frame* begin, const Frame* end) const;
  int64_t remaining(const Frame& f) const;
  int64_t remaining_after_child(const Frame& f) const;

  std::shared_ptr<const Grammar> grammar_;
  const std::vector<Node>& nodes_;
  MatchState state_;
  mutable Stack scratch_;
  mutable MatchState next_;
  mutable std::vector<MatchState> levels_;  // allowed_tokens: the state after each prefix depth
};

}  // namespace qvl::grammar
