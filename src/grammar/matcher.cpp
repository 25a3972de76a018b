#include "grammar/matcher.h"

#include <algorithm>

#include "base/error.h"
#include "grammar/leaf_steps.h"

namespace qvl::grammar {
namespace {

// Stages of container frames.
enum : uint8_t {
  kStart = 0,
  kObjOpen = 1,  // after '{'
  kObjKey = 2,   // a key frame is above
  kObjColon = 3,
  kObjValue = 4,  // after ':'
  kObjInValue = 5,
  kObjAfter = 6,  // after a member
  kObjComma = 7,
  kDone = 9,
};
enum : uint8_t { kArrOpen = 1, kArrInItem = 2, kArrAfter = 3, kArrComma = 4 };
enum : uint8_t { kRepNeed = 0, kRepInItem = 1, kRepAfter = 2, kRepInSep = 3 };
enum : uint8_t { kStrContent = 1, kStrClosed = 7 };

bool is_ws(uint8_t c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

// First required property at or after `next` (the last key allowed now), or the last property.
size_t key_limit(const Node& obj, size_t next) {
  for (size_t q = next; q < obj.properties.size(); ++q) {
    if (obj.properties[q].required) return q;
  }
  return obj.properties.size() - 1;
}

bool can_close(const Node& obj, size_t next) {
  if (obj.free_object) return true;
  for (size_t q = next; q < obj.properties.size(); ++q) {
    if (obj.properties[q].required) return false;
  }
  return true;
}

}  // namespace

void MatchState::add(const std::vector<Frame>& stack) {
  for (size_t k = 0; k < stacks(); ++k) {
    if (static_cast<size_t>(stack_end(k) - stack_begin(k)) == stack.size() &&
        std::equal(stack.begin(), stack.end(), stack_begin(k))) {
      return;
    }
  }
  if (stacks() >= kMaxStacks) return;
  frames_.insert(frames_.end(), stack.begin(), stack.end());
  ends_.push_back(static_cast<uint32_t>(frames_.size()));
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), nodes_(grammar_->nodes) {
  Stack s;
  expand(s, grammar_->root, state_);
}

void Matcher::expand(Stack& s, uint32_t node, MatchState& out) const {
  const Node& n = nodes_[node];
  if (n.kind == NodeKind::kAnyOf) {
    for (uint32_t alt : n.children) {
      Stack copy = s;
      expand(copy, alt, out);
    }
    return;
  }
  Frame f;
  f.node = node;
  if (n.kind == NodeKind::kLiterals) f.b = static_cast<int32_t>(n.literals.size());
  s.push_back(f);
  out.add(s);
}

void Matcher::enter(Stack& s, uint32_t node, uint8_t c, MatchState& out) const {
  const Node& n = nodes_[node];
  if (!n.first[c]) return;
  if (n.kind == NodeKind::kAnyOf) {
    for (uint32_t alt : n.children) {
      if (!nodes_[alt].first[c]) continue;
      Stack copy = s;
      enter(copy, alt, c, out);
    }
    return;
  }
  Frame f;
  f.node = node;
  if (n.kind == NodeKind::kLiterals) f.b = static_cast<int32_t>(n.literals.size());
  s.push_back(f);
  feed(s, c, out);
}

void Matcher::pop(Stack& s) const {
  const Frame child = s.back();
  s.pop_back();
  if (!s.empty()) child_done(s.back(), child);
}

void Matcher::child_done(Frame& parent, const Frame& child) const {
  const Node& n = nodes_[parent.node];
  switch (n.kind) {
    case NodeKind::kObject:
      if (parent.stage == kObjKey) {
        parent.stage = kObjColon;
        if (!n.free_object) parent.c = nodes_[child.node].tags[child.a];
      } else if (parent.stage == kObjInValue) {
        parent.stage = kObjAfter;
        if (!n.free_object) parent.a = parent.c + 1;
        ++parent.b;
      }
      break;
    case NodeKind::kArray:
      parent.stage = kArrAfter;
      ++parent.a;
      break;
    case NodeKind::kSequence:
      ++parent.a;
      break;
    case NodeKind::kRepeat:
      if (parent.stage == kRepInItem) {
        parent.stage = kRepAfter;
        ++parent.a;
      } else {
        parent.stage = kRepNeed;
      }
      break;
    default:
      QVL_CHECK(false);  // leaves have no children
  }
}

bool Matcher::finishable(const Frame& f) const {
  const Node& n = nodes_[f.node];
  switch (n.kind) {
    case NodeKind::kLiterals:
      return literal_finishable(n, f);
    case NodeKind::kString:
      return f.stage == kStrClosed;
    case NodeKind::kNumber:
      return f.stage == 2 || f.stage == 3 || f.stage == 5 || f.stage == 8;
    case NodeKind::kObject:
    case NodeKind::kArray:
      return f.stage == kDone;
    case NodeKind::kSequence:
      return f.a == static_cast<int32_t>(n.children.size());
    case NodeKind::kRepeat:
      return f.stage == kRepAfter && f.a >= n.min_items;
    case NodeKind::kAnyOf:
      break;
  }
  return false;
}

void Matcher::feed(Stack& s, uint8_t c, MatchState& out) const {
  while (!s.empty()) {
    Frame& f = s.back();
    const Node& n = nodes_[f.node];
    const bool ws_ok = is_ws(c) && f.ws < kMaxWhitespaceRun;
    switch (n.kind) {
      case NodeKind::kLiterals:
      case NodeKind::kString:
      case NodeKind::kNumber: {
        Frame next = f;
        const bool go = n.kind == NodeKind::kLiterals ? literal_consume(n, next, c)
                        : n.kind == NodeKind::kString ? string_consume(n, next, c)
                                                      : number_consume(n, next, c);
        const bool end = finishable(f);
        if (go && end) {  // both the longer match and what follows this one: fork
          Stack copy = s;
          pop(copy);
          feed(copy, c, out);
        }
        if (go) {
          s.back() = next;
          out.add(s);
          return;
        }
        if (!end) return;
        pop(s);
        continue;
      }
      case NodeKind::kObject: {
        if (f.stage == kDone) {
          pop(s);
          continue;
        }
        if (f.stage == kStart) {
          if (c != '{') return;
          f.stage = kObjOpen;
          out.add(s);
          return;
        }
        if (ws_ok && f.stage != kObjKey && f.stage != kObjInValue) {
          ++f.ws;
          out.add(s);
          return;
        }
        f.ws = 0;
        const size_t next = static_cast<size_t>(f.a);
        switch (f.stage) {
          case kObjOpen:
          case kObjComma:
            if (c == '}' && f.stage == kObjOpen && can_close(n, next)) {
              f.stage = kDone;
              out.add(s);
              return;
            }
            if (c != '"') return;
            f.stage = kObjKey;
            if (n.free_object) return enter(s, n.free_key, c, out);
            if (next >= n.properties.size()) return;
            {
              Frame key;
              key.node = n.keys;
              key.b = static_cast<int32_t>(nodes_[n.keys].literals.size());
              key.tag_lo = static_cast<uint16_t>(next);
              key.tag_hi = static_cast<uint16_t>(key_limit(n, next));
              s.push_back(key);
            }
            continue;
          case kObjColon:
            if (c != ':') return;
            f.stage = kObjValue;
            out.add(s);
            return;
          case kObjValue:
            f.stage = kObjInValue;
            return enter(s, n.free_object ? n.free_value : n.properties[f.c].value, c, out);
          case kObjAfter:
            if (c == '}' && can_close(n, next)) {
              f.stage = kDone;
            } else if (c == ',' && (n.free_object || next < n.properties.size())) {
              f.stage = kObjComma;
            } else {
              return;
            }
            out.add(s);
            return;
        }
        return;
      }
      case NodeKind::kArray: {
        if (f.stage == kDone) {
          pop(s);
          continue;
        }
        if (f.stage == kStart) {
          if (c != '[') return;
          f.stage = kArrOpen;
          out.add(s);
          return;
        }
        if (ws_ok) {
          ++f.ws;
          out.add(s);
          return;
        }
        f.ws = 0;
        const bool more = n.max_items < 0 || f.a < n.max_items;
        if (f.stage == kArrAfter) {
          if (c == ']' && f.a >= n.min_items) {
            f.stage = kDone;
          } else if (c == ',' && more) {
            f.stage = kArrComma;
          } else {
            return;
          }
          out.add(s);
          return;
        }
        if (c == ']' && f.stage == kArrOpen && n.min_items == 0) {
          f.stage = kDone;
          out.add(s);
          return;
        }
        if (!more) return;
        f.stage = kArrInItem;
        return enter(s, n.item, c, out);
      }
      case NodeKind::kSequence:
        if (f.a == static_cast<int32_t>(n.children.size())) {
          pop(s);
          continue;
        }
        return enter(s, n.children[f.a], c, out);
      case NodeKind::kRepeat: {
        if (f.stage == kRepNeed) {
          f.stage = kRepInItem;
          return enter(s, n.item, c, out);
        }
        const bool more = (n.max_items < 0 || f.a < n.max_items) && nodes_[n.separator].first[c];
        const bool end = f.a >= n.min_items;
        if (more && end) {
          Stack copy = s;
          pop(copy);
          feed(copy, c, out);
        }
        if (more) {
          s.back().stage = kRepInSep;
          return enter(s, n.separator, c, out);
        }
        if (!end) return;
        pop(s);
        continue;
      }
      case NodeKind::kAnyOf:
        QVL_CHECK(false);  // expanded on entry
    }
  }
}

bool Matcher::step(const MatchState& from, uint8_t byte, MatchState& to) const {
  to.clear();
  for (size_t k = 0; k < from.stacks(); ++k) {
    scratch_.assign(from.stack_begin(k), from.stack_end(k));
    feed(scratch_, byte, to);
  }
  return !to.empty();
}

bool Matcher::advance(std::string_view bytes) {
  MatchState current = state_;
  for (char ch : bytes) {
    if (!step(current, static_cast<uint8_t>(ch), next_)) return false;
    std::swap(current, next_);
  }
  state_ = std::move(current);
  return true;
}

bool Matcher::accepting_stack(Stack s) const {
  while (!s.empty()) {
    if (!finishable(s.back())) return false;
    pop(s);
  }
  return true;
}

bool Matcher::accepting(const MatchState& state) const {
  for (size_t k = 0; k < state.stacks(); ++k) {
    if (accepting_stack(Stack(state.stack_begin(k), state.stack_end(k)))) return true;
  }
  return false;
}

bool Matcher::finished() const {
  if (!accepting()) return false;
  for (int b = 0; b < 256; ++b) {
    if (step(state_, static_cast<uint8_t>(b), next_)) return false;
  }
  return true;
}

bool Matcher::in_plain_string(const MatchState& state) const {
  for (size_t k = 0; k < state.stacks(); ++k) {
    const Frame& top = state.stack_end(k)[-1];
    const Node& n = nodes_[top.node];
    if (n.kind != NodeKind::kString || n.format != StringFormat::kNone ||
        top.stage != kStrContent || top.a != 0) {
      return false;
    }
  }
  return !state.empty();
}

}  // namespace qvl::grammar
