// GGUF (llama.cpp's model format, versions 2 and 3): header, metadata key/values, tensor infos
// and the aligned data section, read from an mmap or a caller's buffer. Every count, length,
// dimension and offset is checked against the bytes that are really there while reading (sizes
// overflow-safe), so a truncated or hostile file fails with one line naming the file and what is
// wrong, and nothing is allocated from an unchecked count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "model/gguf_types.h"

namespace qvl {

// Metadata value types as numbered in the file.
enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
const char* gguf_value_type_name(GgufValueType type);

// One metadata value: a scalar, or an array of scalars of one type (arrays of arrays are refused:
// no model uses them). Integers and bools are in `ints` (u64 above INT64_MAX is refused), floats
// in `floats`, strings in `strings`; a scalar is an array of one with is_array false.
struct GgufValue {
  GgufValueType type = GgufValueType::kU8;  // the scalar type (of the elements for arrays)
  bool is_array = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;

  bool is_integer() const;  // u8..i64 and bool
  bool is_float() const { return type == GgufValueType::kF32 || type == GgufValueType::kF64; }
  size_t size() const;
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> dims;  // ggml order: dims[0] varies fastest (a row of a matrix)
  uint64_t offset = 0;        // from the start of the data section
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const;
  // The Hugging Face / PyTorch shape: dims reversed (a [rows, cols] matrix has dims {cols, rows}).
  std::vector<int64_t> torch_shape() const;
};

class GgufFile {
 public:
  // Limits far above any real model (Qwen3-VL-32B: ~700 tensors, ~40 keys, 151k-entry vocab).
  static constexpr uint64_t kMaxTensors = 1u << 20;
  static constexpr uint64_t kMaxKeys = 1u << 20;
  static constexpr uint64_t kMaxKeyBytes = 65535;
  static constexpr uint64_t kMaxNameBytes = 1024;
  static constexpr uint32_t kMaxDims = 4;
  static constexpr uint32_t kMaxAlignment = 1u << 20;

  // Maps and parses the file; throws Error(kCorrupt / kUnsupported / kIo) naming it.
  static GgufFile open(const std::string& path);
  // Parses bytes the caller keeps alive for the life of the result; origin names them in errors.
  static GgufFile parse(const uint8_t* data, size_t size, const std::string& origin);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;

  const std::string& path() const { return origin_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }  // where the data section starts

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;
  // Typed access; a missing key or another type throws Error(kCorrupt) naming file and key.
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;  // integers are accepted too
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  const std::vector<int64_t>& get_ints(const std::string& key) const;  // integer or bool array
  const std::vector<std::string>& get_strings(const std::string& key) const;
  std::optional<int64_t> int_or_none(const std::string& key) const;
  std::optional<std::string> string_or_none(const std::string& key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;
  const GgufTensor& tensor(const std::string& name) const;  // throws kNotFound naming the file

  // Shapes of error messages: "<what> in GGUF file '<path>'".
  [[noreturn]] void corrupt(const std::string& what) const;

 private:
  GgufFile() = default;
  void parse_all(const uint8_t* data, size_t size);

  MappedFile file_;  // empty when parsing a caller's buffer
  std::string origin_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// True when the file starts with the GGUF magic (false for folders and unreadable paths).
bool is_gguf_file(const std::string& path);

}  // namespace qvl
