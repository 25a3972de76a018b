// A compiled output grammar: a graph of JSON-shaped nodes (objects with declared properties,
// arrays, strings, numbers, literal alternatives, anyOf) plus the few plain-text nodes a tool-call
// wrapper needs (sequences, repeats). The matcher (matcher.h) runs it byte by byte as a pushdown
// automaton; nodes never match the empty string, so every node has a well-defined first byte.
#pragma once

#include <bitset>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace qvl::grammar {

constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();
constexpr int64_t kUnreachable = std::numeric_limits<int64_t>::max() / 4;
// Whitespace bytes allowed in one run between JSON tokens: enough for pretty-printed output
// nested a few levels, but bounded so a model cannot loop in whitespace forever.
constexpr int kMaxWhitespaceRun = 24;
// Digits allowed per part of a number (integer part, fraction, exponent): bounded for the same
// reason; 15 integer digits keep integers exact in IEEE doubles.
constexpr int kMaxIntegerDigits = 15;
constexpr int kMaxFractionDigits = 15;
constexpr int kMaxExponentDigits = 3;

enum class NodeKind : uint8_t {
  kLiterals,  // one of a sorted set of byte strings (const, enum, true/false/null, keys, text)
  kString,    // a JSON string, optionally of a format
  kNumber,    // a JSON number, or an integer
  kObject,    // declared properties in schema order, or a free object (any keys and values)
  kArray,     // items with minItems / maxItems
  kAnyOf,     // one of the alternatives (expanded when entered; never a frame)
  kSequence,  // the children one after another
  kRepeat,    // item (separator item)*, between min and max times
};

enum class StringFormat : uint8_t { kNone, kDate, kTime, kDateTime, kUuid };

struct Property {
  std::string key;  // the key as JSON text, quotes included: "\"name\""
  uint32_t value = kNoNode;
  bool required = false;
};

struct Node {
  NodeKind kind = NodeKind::kLiterals;
  // kLiterals: sorted, distinct, non-empty. tags[i] is the property index for object keys.
  std::vector<std::string> literals;
  std::vector<uint16_t> tags;
  uint32_t key_owner = kNoNode;  // kLiterals used as the keys of this object node
  // kString
  StringFormat format = StringFormat::kNone;
  // kNumber
  bool integer = false;
  // kObject: declared properties, or free (keys: free_key string node, values: free_value)
  std::vector<Property> properties;
  uint32_t keys = kNoNode;  // kLiterals node of the property keys
  bool free_object = false;
  uint32_t free_key = kNoNode;
  uint32_t free_value = kNoNode;
  // kArray, kRepeat: item (and separator) with counts; max_items < 0 = unbounded
  uint32_t item = kNoNode;
  uint32_t separator = kNoNode;
  int32_t min_items = 0;
  int32_t max_items = -1;
  // kAnyOf, kSequence
  std::vector<uint32_t> children;

  // Filled by Grammar::finalize: shortest match in bytes, and the bytes a match can start with.
  int64_t min_bytes = kUnreachable;
  std::bitset<256> first;
};

struct Grammar {
  std::vector<Node> nodes;
  uint32_t root = kNoNode;

  uint32_t add(Node node) {
    nodes.push_back(std::move(node));
    return static_cast<uint32_t>(nodes.size() - 1);
  }
  // Computes min_bytes and first sets (fixed points, so recursive $refs work) and checks that
  // every node can be completed. Throws Error(kInvalidArgument) for a grammar with a part that
  // no finite output satisfies (e.g. a required property that refers to itself).
  void finalize();

  // Fixed length of a formatted string's content (without quotes).
  static int format_length(StringFormat format);
};

}  // namespace qvl::grammar
