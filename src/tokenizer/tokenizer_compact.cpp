// The compact form of a Tokenizer (see tokenizer.h): little-endian binary,
//   "QVLTOK01"
//   u8 nfc, u8 has_split, str split_pattern
//   u32 n_ids, then per id: u8 flags, str bytes         (id_bytes / id_flags)
//   i32 byte_ids[256]
//   u32 n_vocab, then per entry: i32 id, u8 own, [str bytes if own]
//                                 (spelling = byte-level symbols of the bytes; not own: id's bytes)
//   u32 n_merges, then per merge: i32 left, right, merged (in rank order)
//   u32 n_added, then per token: i32 id, u8 special, str content
// where str is u32 length + bytes. Reading needs no JSON parse and no string search: the vocab
// is already in bytes and merges already in ids, which is what makes it fast.
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_state.h"

namespace qvl {
namespace {

constexpr char kMagic[8] = {'Q', 'V', 'L', 'T', 'O', 'K', '0', '1'};
constexpr uint32_t kMaxIds = (1u << 24) + 1;  // token ids are at most 2^24, as in tokenizer.json

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint8_t u8() { return static_cast<uint8_t>(take(1)[0]); }
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, take(4).data(), 4);
    return v;
  }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  std::string_view str() { return take(u32()); }
  // A count of items of at least `min_item_bytes` each: bounded by what is left, so a damaged
  // count cannot make the caller reserve absurd amounts of memory.
  uint32_t count(size_t min_item_bytes) {
    const uint32_t n = u32();
    if (static_cast<uint64_t>(n) * min_item_bytes > in_.size() - pos_) corrupt("a count");
    return n;
  }
  bool done() const { return pos_ == in_.size(); }
  [[noreturn]] static void corrupt(const std::string& what) {
    fail(ErrorCode::kCorrupt, "compact tokenizer is damaged: bad " + what);
  }

 private:
  std::string_view take(size_t n) {
    if (n > in_.size() - pos_) corrupt("length (truncated?)");
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

int32_t checked_id(int32_t id, size_t n_ids, const char* what) {
  if (id < 0 || static_cast<size_t>(id) >= n_ids) Reader::corrupt(what);
  return id;
}

}  // namespace

const std::unordered_map<std::string, int32_t>& Tokenizer::State::spellings() const {
  std::call_once(spelling_once, [this] {
    const ByteLevelAlphabet& alphabet = byte_level_alphabet();
    spelling_to_id.reserve(spelling_to_id.size() + lazy_vocab_ids.size() + lazy_vocab_other.size());
    for (int32_t id : lazy_vocab_ids) spelling_to_id.emplace(alphabet.to_symbols(id_bytes[id]), id);
    for (const auto& [id, bytes] : lazy_vocab_other) {
      spelling_to_id.emplace(alphabet.to_symbols(bytes), id);
    }
  });
  return spelling_to_id;
}

std::string Tokenizer::to_compact() const {
  const State& s = *state_;
  Writer w;
  w.raw(kMagic, sizeof(kMagic));
  w.u8(s.nfc ? 1 : 0);
  w.u8(s.pretokenizer ? 1 : 0);
  w.str(s.split_pattern);
  w.u32(static_cast<uint32_t>(s.id_bytes.size()));
  for (size_t id = 0; id < s.id_bytes.size(); ++id) {
    w.u8(s.id_flags[id]);
    w.str(s.id_bytes[id]);
  }
  for (int32_t id : s.byte_ids) w.i32(id);
  // Sorted, so the same tokenizer always gives the same bytes.
  std::vector<std::pair<int32_t, std::string>> vocab;
  vocab.reserve(s.spellings().size());
  const ByteLevelAlphabet& alphabet = byte_level_alphabet();
  for (const auto& [spelling, id] : s.spellings()) {
    vocab.emplace_back(id, *alphabet.to_bytes(spelling));  // every stored spelling converts
  }
  std::sort(vocab.begin(), vocab.end());
  w.u32(static_cast<uint32_t>(vocab.size()));
  for (const auto& [id, bytes] : vocab) {
    w.i32(id);
    const bool own = bytes != s.id_bytes[id];  // only where an added token took the id
    w.u8(own ? 1 : 0);
    if (own) w.str(bytes);
  }
  w.u32(static_cast<uint32_t>(s.merges.size()));
  for (const BpeModel::Merge& m : s.merges) {
    w.i32(m.left);
    w.i32(m.right);
    w.i32(m.merged);
  }
  w.u32(static_cast<uint32_t>(s.added.size()));
  for (const AddedToken& t : s.added) {
    w.i32(t.id);
    w.u8(t.special ? 1 : 0);
    w.str(t.content);
  }
  return w.take();
}

Tokenizer Tokenizer::from_compact(std::string_view compact) {
  if (compact.size() < sizeof(kMagic) || std::memcmp(compact.data(), kMagic, sizeof(kMagic))) {
    Reader::corrupt("header (not a compact tokenizer, or another version)");
  }
  Reader r(compact.substr(sizeof(kMagic)));
  auto state = std::make_shared<State>();
  State& s = *state;
  s.nfc = r.u8() != 0;
  const bool has_split = r.u8() != 0;
  s.split_pattern = std::string(r.str());
  if (has_split) s.pretokenizer.emplace(s.split_pattern);
  const uint32_t n_ids = r.count(5);
  if (n_ids > kMaxIds) Reader::corrupt("vocabulary size");
  s.id_bytes.resize(n_ids);
  s.id_flags.resize(n_ids);
  for (uint32_t id = 0; id < n_ids; ++id) {
    s.id_flags[id] = r.u8();
    if (s.id_flags[id] & ~(kTokenAdded | kTokenSpecial)) Reader::corrupt("token flags");
    s.id_bytes[id] = std::string(r.str());
  }
  for (int32_t& id : s.byte_ids) id = checked_id(r.i32(), n_ids, "byte token");
  const uint32_t n_vocab = r.count(5);
  s.lazy_vocab_ids.reserve(n_vocab);
  for (uint32_t i = 0; i < n_vocab; ++i) {
    const int32_t id = checked_id(r.i32(), n_ids, "vocabulary id");
    if (r.u8() == 0) {
      s.lazy_vocab_ids.push_back(id);
    } else {
      s.lazy_vocab_other.emplace_back(id, std::string(r.str()));
    }
  }
  const uint32_t n_merges = r.count(12);
  s.merges.resize(n_merges);
  for (BpeModel::Merge& m : s.merges) {
    m.left = checked_id(r.i32(), n_ids, "merge");
    m.right = checked_id(r.i32(), n_ids, "merge");
    m.merged = checked_id(r.i32(), n_ids, "merge");
  }
  const uint32_t n_added = r.count(9);
  std::vector<std::pair<std::string, int32_t>> matcher_tokens;
  for (uint32_t i = 0; i < n_added; ++i) {
    AddedToken t;
    t.id = checked_id(r.i32(), n_ids, "added token id");
    t.special = r.u8() != 0;
    t.content = std::string(r.str());
    if (t.content.empty()) Reader::corrupt("added token");
    matcher_tokens.emplace_back(t.content, t.id);
    s.added.push_back(std::move(t));
  }
  if (!r.done()) Reader::corrupt("length (trailing bytes)");
  s.added_matcher = AddedTokenMatcher(matcher_tokens);
  s.bpe.emplace(s.byte_ids, s.merges);
  return Tokenizer(std::move(state));
}

}  // namespace qvl
