#include "model/gguf_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/error.h"

namespace qvl {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32

// Size in the file of a scalar of each type (0: strings and arrays, which have their own).
uint64_t scalar_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

// Sequential reads that never pass the end of the buffer; every failure names the offset.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const GgufFile& file)
      : data_(data), size_(size), file_(file) {}

  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  void need(uint64_t n, const char* what) const {
    if (n > left()) {
      file_.corrupt(std::string(what) + " at byte " + std::to_string(pos_) + " needs " +
                    std::to_string(n) + " bytes, but the file has " + std::to_string(left()) +
                    " left (truncated file?)");
    }
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));  // GGUF is little-endian, as every target here
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what, uint64_t max_len) {
    const uint64_t n = read<uint64_t>(what);
    if (n > max_len) {
      file_.corrupt(std::string(what) + " at byte " + std::to_string(pos_ - 8) + " is " +
                    std::to_string(n) + " bytes long (the limit is " + std::to_string(max_len) +
                    ")");
    }
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const GgufFile& file_;
};

// Names in a damaged file may hold any bytes: messages stay one printable line of bounded length.
std::string one_line(const std::string& s) {
  constexpr size_t kMaxMessage = 1000;
  std::string out;
  for (unsigned char ch : s) {
    if (out.size() >= kMaxMessage) return out + "...";
    if (ch < 0x20 || ch == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

bool valid_value_type(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufValueType::kF64);
}

void read_scalar(Cursor& c, GgufValueType t, GgufValue& v, const GgufFile& file,
                 const std::string& key) {
  switch (t) {
    case GgufValueType::kU8:
      v.ints.push_back(c.read<uint8_t>("a u8 value"));
      return;
    case GgufValueType::kI8:
      v.ints.push_back(c.read<int8_t>("an i8 value"));
      return;
    case GgufValueType::kU16:
      v.ints.push_back(c.read<uint16_t>("a u16 value"));
      return;
    case GgufValueType::kI16:
      v.ints.push_back(c.read<int16_t>("an i16 value"));
      return;
    case GgufValueType::kU32:
      v.ints.push_back(c.read<uint32_t>("a u32 value"));
      return;
    case GgufValueType::kI32:
      v.ints.push_back(c.read<int32_t>("an i32 value"));
      return;
    case GgufValueType::kI64:
      v.ints.push_back(c.read<int64_t>("an i64 value"));
      return;
    case GgufValueType::kU64: {
      const uint64_t u = c.read<uint64_t>("a u64 value");
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        file.corrupt("key '" + key + "' holds the u64 " + std::to_string(u) +
                     ", beyond any count or size qvl reads");
      }
      v.ints.push_back(static_cast<int64_t>(u));
      return;
    }
    case GgufValueType::kBool: {
      const uint8_t b = c.read<uint8_t>("a bool value");
      if (b > 1) file.corrupt("key '" + key + "' holds the bool byte " + std::to_string(b));
      v.ints.push_back(b);
      return;
    }
    case GgufValueType::kF32:
      v.floats.push_back(c.read<float>("an f32 value"));
      return;
    case GgufValueType::kF64:
      v.floats.push_back(c.read<double>("an f64 value"));
      return;
    case GgufValueType::kString:
      v.strings.push_back(c.string("a string value", std::numeric_limits<uint64_t>::max()));
      return;
    case GgufValueType::kArray:
      break;
  }
  file.corrupt("key '" + key + "' nests an array in an array (not supported)");
}

}  // namespace

const char* gguf_value_type_name(GgufValueType t) {
  static const char* const kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                       "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < 13 ? kNames[i] : "?";
}

bool GgufValue::is_integer() const {
  return !is_float() && type != GgufValueType::kString && type != GgufValueType::kArray;
}

size_t GgufValue::size() const {
  return ints.size() + floats.size() + strings.size();
}

int64_t GgufTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> GgufTensor::torch_shape() const {
  return {dims.rbegin(), dims.rend()};
}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile f;
  f.file_ = MappedFile(path);
  f.origin_ = path;
  f.parse_all(f.file_.data(), f.file_.size());
  return f;
}

GgufFile GgufFile::parse(const uint8_t* data, size_t size, const std::string& origin) {
  GgufFile f;
  f.origin_ = origin;
  f.parse_all(data, size);
  return f;
}

void GgufFile::corrupt(const std::string& what) const {
  fail(ErrorCode::kCorrupt, one_line("corrupt GGUF file '" + origin_ + "': " + what));
}

void GgufFile::parse_all(const uint8_t* data, size_t size) {
  Cursor c(data, size, *this);
  if (size < 4 || c.read<uint32_t>("the magic") != kMagic) {
    fail(ErrorCode::kCorrupt, "'" + origin_ + "' is not a GGUF file (no GGUF magic)");
  }
  version_ = c.read<uint32_t>("the version");
  if (version_ != 2 && version_ != 3) {
    fail(ErrorCode::kUnsupported, "GGUF file '" + origin_ + "' has version " +
                                      std::to_string(version_) + "; qvl reads versions 2 and 3");
  }
  const uint64_t n_tensors = c.read<uint64_t>("the tensor count");
  const uint64_t n_keys = c.read<uint64_t>("the key/value count");
  // Each entry takes at least 8 (key or name length) + 4 bytes, so a count the rest of the file
  // cannot hold is refused before anything is read or reserved for it.
  if (n_tensors > kMaxTensors || n_tensors > c.left() / 12) {
    corrupt("tensor count " + std::to_string(n_tensors) + " is impossible for a file of " +
            std::to_string(size) + " bytes");
  }
  if (n_keys > kMaxKeys || n_keys > c.left() / 12) {
    corrupt("key/value count " + std::to_string(n_keys) + " is impossible for a file of " +
            std::to_string(size) + " bytes");
  }
  for (uint64_t k = 0; k < n_keys; ++k) {
    std::string key = c.string("a key", kMaxKeyBytes);
    if (key.empty()) corrupt("key number " + std::to_string(k) + " is empty");
    const uint32_t t = c.read<uint32_t>("a value type");
    if (!valid_value_type(t)) {
      corrupt("key '" + key + "' has the unknown value type " + std::to_string(t));
    }
    GgufValue v;
    if (static_cast<GgufValueType>(t) == GgufValueType::kArray) {
      const uint32_t et = c.read<uint32_t>("an array element type");
      if (!valid_value_type(et)) {
        corrupt("array '" + key + "' has the unknown element type " + std::to_string(et));
      }
      v.type = static_cast<GgufValueType>(et);
      if (v.type == GgufValueType::kArray) {
        corrupt("key '" + key + "' nests an array in an array (not supported)");
      }
      v.is_array = true;
      const uint64_t n = c.read<uint64_t>("an array length");
      // Strings take at least their 8-byte length; other elements their own size.
      const uint64_t min_bytes = v.type == GgufValueType::kString ? 8 : scalar_bytes(v.type);
      if (min_bytes == 0 || n > c.left() / min_bytes) {
        corrupt("array '" + key + "' claims " + std::to_string(n) + " " +
                gguf_value_type_name(v.type) + " elements, more than the file holds");
      }
      for (uint64_t i = 0; i < n; ++i) read_scalar(c, v.type, v, *this, key);
    } else {
      v.type = static_cast<GgufValueType>(t);
      read_scalar(c, v.type, v, *this, key);
    }
    if (!metadata_.emplace(key, std::move(v)).second) corrupt("key '" + key + "' appears twice");
  }
  if (const GgufValue* a = find("general.alignment")) {
    if (a->is_array || a->type != GgufValueType::kU32) {
      corrupt("general.alignment is not a u32");
    }
    const int64_t al = a->ints[0];
    if (al <= 0 || al > kMaxAlignment || (al & (al - 1)) != 0) {
      corrupt("general.alignment " + std::to_string(al) + " is not a power of two up to " +
              std::to_string(kMaxAlignment));
    }
    alignment_ = static_cast<uint64_t>(al);
  }
  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = c.string("a tensor name", kMaxNameBytes);
    if (t.name.empty()) corrupt("tensor number " + std::to_string(i) + " has an empty name");
    const std::string where = "tensor '" + t.name + "'";
    const uint32_t n_dims = c.read<uint32_t>("a dimension count");
    if (n_dims == 0 || n_dims > kMaxDims) {
      corrupt(where + " has " + std::to_string(n_dims) + " dimensions (1 to " +
              std::to_string(kMaxDims) + " allowed)");
    }
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = c.read<uint64_t>("a dimension");
      // Each dimension and their product stay far below 2^62, so byte counts cannot overflow.
      constexpr uint64_t kMaxElems = 1ull << 50;
      if (dim == 0 || dim > kMaxElems || numel > kMaxElems / dim) {
        corrupt(where + " has an impossible dimension " + std::to_string(dim));
      }
      numel *= dim;
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    const uint32_t type_id = c.read<uint32_t>("a tensor type");
    const auto info = ggml_type_info(type_id);
    if (!info) {
      fail(ErrorCode::kUnsupported,
           one_line(where + " in GGUF file '" + origin_ + "' has the ggml type " +
                    std::to_string(type_id) + ", which qvl does not know"));
    }
    t.type = static_cast<GgmlType>(type_id);
    const auto row = ggml_row_bytes(t.type, t.dims[0]);
    if (!row) {
      corrupt(where + " has rows of " + std::to_string(t.dims[0]) + " elements, not whole " +
              info->name + " blocks of " + std::to_string(info->block_elems));
    }
    t.nbytes = static_cast<size_t>(*row * (numel / static_cast<uint64_t>(t.dims[0])));
    t.offset = c.read<uint64_t>("a tensor offset");
    if (t.offset % alignment_ != 0) {
      corrupt(where + " starts at offset " + std::to_string(t.offset) + ", not a multiple of " +
              "the alignment " + std::to_string(alignment_));
    }
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) {
      corrupt(where + " appears twice");
    }
    tensors_.push_back(std::move(t));
  }
  // The data section starts at the next multiple of the alignment (it may be empty).
  const uint64_t pad = (alignment_ - c.pos() % alignment_) % alignment_;
  if (n_tensors > 0) c.need(pad, "the padding before the tensor data");
  data_offset_ = c.pos() + static_cast<size_t>(std::min<uint64_t>(pad, c.left()));
  const uint64_t data_size = size - data_offset_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (GgufTensor& t : tensors_) {
    if (t.offset > data_size || t.nbytes > data_size - t.offset) {
      corrupt("tensor '" + t.name + "' (" + ggml_type_name(t.type) + ", " +
              std::to_string(t.nbytes) + " bytes at offset " + std::to_string(t.offset) +
              ") lies outside the data section of " + std::to_string(data_size) +
              " bytes (truncated file?)");
    }
    t.data = data + data_offset_ + t.offset;
    ranges.emplace_back(t.offset, t.offset + t.nbytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) corrupt("tensor data ranges overlap");
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

namespace {
[[noreturn]] void wrong_type(const GgufFile& f, const std::string& key, const GgufValue& v,
                             const char* wanted) {
  f.corrupt("key '" + key + "' is " + (v.is_array ? "an array of " : "a ") +
            gguf_value_type_name(v.type) + ", expected " + wanted);
}
const GgufValue& required(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (!v) f.corrupt("the key '" + key + "' is missing");
  return *v;
}
}  // namespace

int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue& v = required(*this, key);
  if (v.is_array || !v.is_integer() || v.type == GgufValueType::kBool) {
    wrong_type(*this, key, v, "an integer");
  }
  return v.ints[0];
}

double GgufFile::get_float(const std::string& key) const {
  const GgufValue& v = required(*this, key);
  if (v.is_array || (!v.is_float() && !v.is_integer())) wrong_type(*this, key, v, "a number");
  return v.is_float() ? v.floats[0] : static_cast<double>(v.ints[0]);
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue& v = required(*this, key);
  if (v.is_array || v.type != GgufValueType::kBool) wrong_type(*this, key, v, "a bool");
  return v.ints[0] != 0;
}

const std::string& GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = required(*this, key);
  if (v.is_array || v.type != GgufValueType::kString) wrong_type(*this, key, v, "a string");
  return v.strings[0];
}

const std::vector<int64_t>& GgufFile::get_ints(const std::string& key) const {
  const GgufValue& v = required(*this, key);
  if (!v.is_array || !v.is_integer()) wrong_type(*this, key, v, "an array of integers");
  return v.ints;
}

const std::vector<std::string>& GgufFile::get_strings(const std::string& key) const {
  const GgufValue& v = required(*this, key);
  if (!v.is_array || v.type != GgufValueType::kString) {
    wrong_type(*this, key, v, "an array of strings");
  }
  return v.strings;
}

std::optional<int64_t> GgufFile::int_or_none(const std::string& key) const {
  if (!find(key)) return std::nullopt;
  return get_int(key);
}

std::optional<std::string> GgufFile::string_or_none(const std::string& key) const {
  if (!find(key)) return std::nullopt;
  return get_string(key);
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(const std::string& name) const {
  if (const GgufTensor* t = find_tensor(name)) return *t;
  fail(ErrorCode::kNotFound, "tensor '" + name + "' not found in GGUF file '" + origin_ + "'");
}

bool is_gguf_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint32_t magic = 0;
  const ssize_t n = ::read(fd, &magic, sizeof magic);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof magic) && magic == kMagic;
}

}  // namespace qvl
