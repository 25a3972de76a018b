// Completion distances and the per-step token mask.
#include <algorithm>

#include "base/error.h"
#include "grammar/matcher.h"

namespace qvl::grammar {
namespace {

enum : uint8_t { kObjOpen = 1, kObjKey, kObjColon, kObjValue, kObjInValue, kObjAfter, kObjComma };

int64_t required_bytes(const std::vector<Node>& nodes, const Node& obj, size_t from,
                       int64_t* count) {
  int64_t bytes = 0;
  *count = 0;
  for (size_t q = from; q < obj.properties.size(); ++q) {
    const Property& p = obj.properties[q];
    if (!p.required) continue;
    bytes += static_cast<int64_t>(p.key.size()) + 1 + nodes[p.value].min_bytes;
    ++*count;
  }
  return bytes;
}

// From just after a member (next property `next`): comma + member for each required one, '}'.
int64_t after_member(const std::vector<Node>& nodes, const Node& obj, size_t next) {
  if (obj.free_object) return 1;
  int64_t count = 0;
  const int64_t bytes = required_bytes(nodes, obj, next, &count);
  return bytes + count + 1;
}

}  // namespace

// Fewest bytes that finish frame `f` when it is the top of its stack.
int64_t Matcher::remaining(const Frame& f) const {
  const Node& n = nodes_[f.node];
  switch (n.kind) {
    case NodeKind::kLiterals: {
      int64_t best = kUnreachable;
      for (int32_t k = f.a; k < f.b; ++k) {
        if (!n.tags.empty() && (n.tags[k] < f.tag_lo || n.tags[k] > f.tag_hi)) continue;
        int64_t d = static_cast<int64_t>(n.literals[k].size()) - f.c;
        // Object keys also pay for what must follow the key they become.
        if (n.key_owner != kNoNode) {
          const Node& obj = nodes_[n.key_owner];
          d += 1 + nodes_[obj.properties[n.tags[k]].value].min_bytes +
               after_member(nodes_, obj, n.tags[k] + 1);
        }
        best = std::min(best, d);
      }
      return best;
    }
    case NodeKind::kString:
      if (f.stage == 0) return n.min_bytes;
      if (f.stage == 1) {
        return n.format != StringFormat::kNone ? Grammar::format_length(n.format) - f.b + 1
                                               : f.a + 1;
      }
      if (f.stage == 2) return 2;
      if (f.stage >= 3 && f.stage <= 6) return 8 - f.stage;
      return 0;
    case NodeKind::kNumber:
      return f.stage == 2 || f.stage == 3 || f.stage == 5 || f.stage == 8 ? 0 : 1;
    case NodeKind::kObject: {
      const size_t next = static_cast<size_t>(f.a);
      const int64_t value_min = n.free_object ? nodes_[n.free_value].min_bytes
                                              : (f.stage == kObjColon || f.stage == kObjValue
                                                     ? nodes_[n.properties[f.c].value].min_bytes
                                                     : 0);
      switch (f.stage) {
        case 0:
          return n.min_bytes;
        case kObjOpen: {
          if (n.free_object) return 1;
          int64_t count = 0;
          const int64_t bytes = required_bytes(nodes_, n, next, &count);
          return count == 0 ? 1 : bytes + count;
        }
        case kObjColon:
          return 1 + value_min + after_member(nodes_, n, n.free_object ? 0 : f.c + 1);
        case kObjValue:
          return value_min + after_member(nodes_, n, n.free_object ? 0 : f.c + 1);
        case kObjAfter:
          return after_member(nodes_, n, next);
        case kObjComma: {
          if (n.free_object) return 2 + 1 + value_min + 1;
          int64_t count = 0;
          const int64_t bytes = required_bytes(nodes_, n, next, &count);
          if (count > 0) return bytes + count;
          int64_t best = kUnreachable;
          for (size_t q = next; q < n.properties.size(); ++q) {
            best = std::min(best, static_cast<int64_t>(n.properties[q].key.size()) + 1 +
                                      nodes_[n.properties[q].value].min_bytes + 1);
          }
          return best;
        }
        default:
          return 0;
      }
    }
    case NodeKind::kArray: {
      const int64_t item = nodes_[n.item].min_bytes;
      switch (f.stage) {
        case 0:
          return n.min_bytes;
        case 1:
          return n.min_items == 0 ? 1 : n.min_items * item + n.min_items;
        case 3: {
          const int64_t k = std::max(0, n.min_items - f.a);
          return k * (1 + item) + 1;
        }
        case 4: {
          const int64_t k = std::max(1, n.min_items - f.a);
          return k * item + k;
        }
        default:
          return 0;
      }
    }
    case NodeKind::kSequence: {
      int64_t total = 0;
      for (size_t j = static_cast<size_t>(f.a); j < n.children.size(); ++j) {
        total += nodes_[n.children[j]].min_bytes;
      }
      return total;
    }
    case NodeKind::kRepeat: {
      const int64_t unit = nodes_[n.separator].min_bytes + nodes_[n.item].min_bytes;
      if (f.stage == 0) return nodes_[n.item].min_bytes + std::max(0, n.min_items - f.a - 1) * unit;
      return std::max(0, n.min_items - f.a) * unit;
    }
    case NodeKind::kAnyOf:
      break;
  }
  return kUnreachable;
}

// Fewest bytes that finish frame `f` once the child frame above it is complete.
int64_t Matcher::remaining_after_child(const Frame& f) const {
  const Node& n = nodes_[f.node];
  switch (n.kind) {
    case NodeKind::kObject:
      if (f.stage == kObjKey) {
        // A declared key's literal frame already counts the rest of its member.
        return n.free_object ? 1 + nodes_[n.free_value].min_bytes + 1 : 0;
      }
      return after_member(nodes_, n, n.free_object ? 0 : f.c + 1);
    case NodeKind::kArray: {
      const int64_t k = std::max(0, n.min_items - f.a - 1);
      return k * (1 + nodes_[n.item].min_bytes) + 1;
    }
    case NodeKind::kSequence: {
      int64_t total = 0;
      for (size_t j = static_cast<size_t>(f.a) + 1; j < n.children.size(); ++j) {
        total += nodes_[n.children[j]].min_bytes;
      }
      return total;
    }
    case NodeKind::kRepeat: {
      const int64_t unit = nodes_[n.separator].min_bytes + nodes_[n.item].min_bytes;
      const int64_t more = std::max(0, n.min_items - f.a - 1) * unit;
      return f.stage == 1 ? more : nodes_[n.item].min_bytes + more;
    }
    default:
      return kUnreachable;  // leaves have no children
  }
}

int64_t Matcher::stack_distance(const Frame* begin, const Frame* end) const {
  int64_t total = remaining(end[-1]);
  for (const Frame* f = begin; f + 1 < end; ++f) total += remaining_after_child(*f);
  return std::min(total, kUnreachable);
}

int64_t Matcher::distance(const MatchState& state) const {
  int64_t best = kUnreachable;
  for (size_t k = 0; k < state.stacks(); ++k) {
    best = std::min(best, stack_distance(state.stack_begin(k), state.stack_end(k)));
  }
  return best;
}

void Matcher::allowed_tokens(const TokenTrie& trie, int64_t max_distance,
                             std::vector<uint64_t>& bits) const {
  bits.assign((trie.vocab_size() + 63) / 64, 0);
  const bool plain = in_plain_string(state_);
  // String content keeps the distance as it is, so the plain set is all in or all out.
  if (plain && distance(state_) <= max_distance) bits = trie.plain_bits();
  const TokenTrie::Nodes& t = plain ? trie.not_plain() : trie.all();
  if (levels_.size() < static_cast<size_t>(t.max_depth) + 1) levels_.resize(t.max_depth + 1);
  levels_[0] = state_;
  for (size_t i = 1; i < t.size();) {
    const uint16_t d = t.depth[i];
    MatchState& here = levels_[d];
    if (!step(levels_[d - 1], t.byte[i], here)) {
      i = t.skip[i];
      continue;
    }
    if (t.tok_begin[i] != t.tok_end[i] && distance(here) <= max_distance) {
      for (uint32_t k = t.tok_begin[i]; k < t.tok_end[i]; ++k) {
        const int32_t id = t.sorted_ids[k];
        bits[id / 64] |= uint64_t{1} << (id % 64);
      }
    }
    ++i;
  }
}

}  // namespace qvl::grammar
