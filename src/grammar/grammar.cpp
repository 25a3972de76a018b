#include "grammar/grammar.h"

#include <algorithm>

#include "base/error.h"

namespace qvl::grammar {
namespace {

int64_t add_bytes(int64_t a, int64_t b) {
  return std::min(kUnreachable, a + b);
}

int64_t times(int64_t count, int64_t bytes) {
  if (count <= 0) return 0;
  if (bytes >= kUnreachable) return kUnreachable;
  return std::min(kUnreachable, count * bytes);
}

// Shortest match of `n` given the current estimates of the other nodes.
int64_t shortest(const Grammar& g, const Node& n) {
  switch (n.kind) {
    case NodeKind::kLiterals: {
      int64_t best = kUnreachable;
      for (const std::string& s : n.literals) best = std::min<int64_t>(best, s.size());
      return best;
    }
    case NodeKind::kString:
      return 2 + Grammar::format_length(n.format);
    case NodeKind::kNumber:
      return 1;
    case NodeKind::kObject: {
      if (n.free_object) return 2;
      int64_t total = 2;
      int64_t count = 0;
      for (const Property& p : n.properties) {
        if (!p.required) continue;
        total = add_bytes(total, add_bytes(p.key.size() + 1, g.nodes[p.value].min_bytes));
        ++count;
      }
      return add_bytes(total, std::max<int64_t>(count - 1, 0));
    }
    case NodeKind::kArray:
      return add_bytes(2, add_bytes(times(n.min_items, g.nodes[n.item].min_bytes),
                                    std::max(n.min_items - 1, 0)));
    case NodeKind::kAnyOf: {
      int64_t best = kUnreachable;
      for (uint32_t c : n.children) best = std::min(best, g.nodes[c].min_bytes);
      return best;
    }
    case NodeKind::kSequence: {
      int64_t total = 0;
      for (uint32_t c : n.children) total = add_bytes(total, g.nodes[c].min_bytes);
      return total;
    }
    case NodeKind::kRepeat:
      return add_bytes(times(n.min_items, g.nodes[n.item].min_bytes),
                       times(n.min_items - 1, g.nodes[n.separator].min_bytes));
  }
  return kUnreachable;
}

std::bitset<256> first_bytes(const Grammar& g, const Node& n) {
  std::bitset<256> f;
  switch (n.kind) {
    case NodeKind::kLiterals:
      for (const std::string& s : n.literals) f.set(static_cast<unsigned char>(s[0]));
      break;
    case NodeKind::kString:
      f.set('"');
      break;
    case NodeKind::kNumber:
      for (char c = '0'; c <= '9'; ++c) f.set(static_cast<unsigned char>(c));
      f.set('-');
      break;
    case NodeKind::kObject:
      f.set('{');
      break;
    case NodeKind::kArray:
      f.set('[');
      break;
    case NodeKind::kAnyOf:
      for (uint32_t c : n.children) f |= g.nodes[c].first;
      break;
    case NodeKind::kSequence:
      f = g.nodes[n.children.front()].first;
      break;
    case NodeKind::kRepeat:
      f = g.nodes[n.item].first;
      break;
  }
  return f;
}

}  // namespace

int Grammar::format_length(StringFormat format) {
  switch (format) {
    case StringFormat::kNone:
      return 0;
    case StringFormat::kDate:
      return 10;  // YYYY-MM-DD
    case StringFormat::kTime:
      return 9;  // HH:MM:SSZ
    case StringFormat::kDateTime:
      return 20;  // YYYY-MM-DDTHH:MM:SSZ
    case StringFormat::kUuid:
      return 36;
  }
  return 0;
}

void Grammar::finalize() {
  QVL_CHECK(root < nodes.size());
  for (const Node& n : nodes) {
    if (n.kind == NodeKind::kLiterals) {
      QVL_CHECK(!n.literals.empty());
      for (const std::string& s : n.literals) QVL_CHECK(!s.empty());
      QVL_CHECK(std::is_sorted(n.literals.begin(), n.literals.end()));
    }
    if (n.kind == NodeKind::kSequence) QVL_CHECK(!n.children.empty());
    if (n.kind == NodeKind::kRepeat) QVL_CHECK(n.min_items >= 1);
  }
  // Both are monotone fixed points: lengths only shrink, first sets only grow.
  for (bool changed = true; changed;) {
    changed = false;
    for (Node& n : nodes) {
      const int64_t m = shortest(*this, n);
      if (m < n.min_bytes) {
        n.min_bytes = m;
        changed = true;
      }
      const std::bitset<256> f = first_bytes(*this, n) | n.first;
      if (f != n.first) {
        n.first = f;
        changed = true;
      }
    }
  }
  if (nodes[root].min_bytes >= kUnreachable) {
    fail(ErrorCode::kInvalidArgument, "the schema admits no finite JSON value");
  }
  // A part that cannot be completed would be a dead end once entered: prune such alternatives,
  // and refuse required parts without any finite value.
  for (Node& n : nodes) {
    if (n.kind == NodeKind::kAnyOf) {
      std::erase_if(n.children, [&](uint32_t c) { return nodes[c].min_bytes >= kUnreachable; });
    }
  }
  for (const Node& n : nodes) {
    if (n.min_bytes >= kUnreachable) continue;
    for (const Property& p : n.properties) {
      if (nodes[p.value].min_bytes >= kUnreachable) {
        fail(ErrorCode::kInvalidArgument,
             "property " + p.key + " admits no finite JSON value (a schema that contains itself)");
      }
    }
    if (n.kind == NodeKind::kArray && nodes[n.item].min_bytes >= kUnreachable) {
      fail(ErrorCode::kInvalidArgument, "array items admit no finite JSON value");
    }
  }
}

}  // namespace qvl::grammar
