#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/half.h"

namespace qvl {
namespace {

using json = nlohmann::json;

// Headers of real checkpoints are a few hundred KiB; anything this large is damage or an attack.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

DType parse_dtype(const std::string& s, const std::string& where) {
  static const std::map<std::string, DType> kNames = {
      {"F64", DType::kF64}, {"F32", DType::kF32},  {"F16", DType::kF16}, {"BF16", DType::kBF16},
      {"I64", DType::kI64}, {"I32", DType::kI32},  {"I16", DType::kI16}, {"I8", DType::kI8},
      {"U8", DType::kU8},   {"BOOL", DType::kBool}};
  auto it = kNames.find(s);
  if (it == kNames.end()) fail(ErrorCode::kUnsupported, where + ": unsupported dtype '" + s + "'");
  return it->second;
}

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  fail(ErrorCode::kCorrupt, "corrupt safetensors file '" + path + "': " + what);
}

}  // namespace

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kF64:
      return "F64";
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kI64:
      return "I64";
    case DType::kI32:
      return "I32";
    case DType::kI16:
      return "I16";
    case DType::kI8:
      return "I8";
    case DType::kU8:
      return "U8";
    case DType::kBool:
      return "BOOL";
  }
  return "?";
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 0;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::ostringstream ss;
  ss << "[";
  for (size_t i = 0; i < shape.size(); ++i) ss << (i ? ", " : "") << shape[i];
  ss << "]";
  return ss.str();
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void TensorView::expect_shape(const std::vector<int64_t>& expected) const {
  if (shape != expected) {
    fail(ErrorCode::kCorrupt, "tensor '" + name + "' in '" + file + "' has shape " +
                                  shape_string(shape) + ", expected " + shape_string(expected));
  }
}

std::vector<float> TensorView::to_f32() const {
  const size_t n = static_cast<size_t>(numel());
  std::vector<float> out(n);
  switch (dtype) {
    case DType::kF32:
      // An empty vector's data() may be null, and memcpy with a null pointer is undefined even
      // for zero bytes.
      if (n > 0) std::memcpy(out.data(), data, n * 4);
      break;
    case DType::kBF16:
    case DType::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, data + 2 * i, 2);
        out[i] = dtype == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
      break;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, data + 8 * i, 8);
        out[i] = static_cast<float>(d);
      }
      break;
    default:
      fail(ErrorCode::kUnsupported, "tensor '" + name + "' has dtype " + dtype_name(dtype) +
                                        ", expected a floating-point type");
  }
  return out;
}

std::vector<int64_t> TensorView::to_i64() const {
  const size_t n = static_cast<size_t>(numel());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kI64:
        std::memcpy(&out[i], data + 8 * i, 8);
        break;
      case DType::kI32: {
        int32_t v;
        std::memcpy(&v, data + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::kI16: {
        int16_t v;
        std::memcpy(&v, data + 2 * i, 2);
        out[i] = v;
        break;
      }
      case DType::kI8:
        out[i] = static_cast<int8_t>(data[i]);
        break;
      case DType::kU8:
      case DType::kBool:
        out[i] = data[i];
        break;
      default:
        fail(ErrorCode::kUnsupported,
             "tensor '" + name + "' has dtype " + dtype_name(dtype) + ", expected an integer type");
    }
  }
  return out;
}

SafeTensorsFile::SafeTensorsFile(const std::string& path) : file_(path) {
  const size_t size = file_.size();
  if (size < 8)
    corrupt(path,
            "file is " + std::to_string(size) + " bytes, too short for a header (truncated file?)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file_.data(), 8);  // little-endian on every platform we build for
  if (header_len > kMaxHeaderBytes || header_len > size - 8) {
    corrupt(path, "header length " + std::to_string(header_len) + " exceeds the file size " +
                      std::to_string(size) + " (truncated file?)");
  }
  json header;
  try {
    header = json::parse(file_.data() + 8, file_.data() + 8 + header_len);
  } catch (const json::exception& e) {
    corrupt(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) corrupt(path, "header is not a JSON object");
  const uint8_t* base = file_.data() + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (entry.is_object()) {
        for (auto& [k, v] : entry.items())
          if (v.is_string()) metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "' in '" + path + "'";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets") || !entry["dtype"].is_string() ||
        !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2) {
      corrupt(path, "malformed header entry for tensor '" + name + "'");
    }
    TensorView t;
    t.name = name;
    t.file = path;
    t.dtype = parse_dtype(entry["dtype"].get<std::string>(), where);
    uint64_t numel = 1;
    for (auto& d : entry["shape"]) {
      if (!d.is_number_unsigned()) corrupt(path, where + " has a negative or non-integer dim");
      const uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / 16 / dim) {
        corrupt(path, where + " has an absurd shape");
      }
      numel *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    auto& offs = entry["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned()) {
      corrupt(path, where + " has invalid data_offsets");
    }
    const uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      corrupt(path, where + " lies outside the file (offsets " + std::to_string(begin) + ".." +
                        std::to_string(end) + ", data section " + std::to_string(data_size) +
                        " bytes; truncated file?)");
    }
    if (end - begin != numel * dtype_size(t.dtype)) {
      corrupt(path, where + " has " + std::to_string(end - begin) + " bytes but shape " +
                        shape_string(t.shape) + " x " + dtype_name(t.dtype) + " needs " +
                        std::to_string(numel * dtype_size(t.dtype)));
    }
    t.data = base + begin;
    t.nbytes = end - begin;
    ranges.emplace_back(begin, end);
    tensors_.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) corrupt(path, "tensor data ranges overlap");
  }
}

const TensorView* SafeTensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& SafeTensorsFile::get(const std::string& name) const {
  if (const TensorView* t = find(name)) return *t;
  fail(ErrorCode::kNotFound, "tensor '" + name + "' not found in '" + path() + "'");
}

WeightStore WeightStore::open_files(const std::vector<std::string>& paths) {
  WeightStore store;
  for (const auto& p : paths) {
    store.where_ += (store.where_.empty() ? "" : ", ") + p;
    store.files_.push_back(std::make_unique<SafeTensorsFile>(p));
    for (const auto& [key, value] : store.files_.back()->metadata()) store.metadata_[key] = value;
    for (const auto& [name, view] : store.files_.back()->tensors()) {
      if (!store.index_.emplace(name, &view).second) {
        fail(ErrorCode::kCorrupt, "tensor '" + name + "' appears in more than one file ('" + p +
                                      "' and '" + store.index_[name]->file + "')");
      }
    }
  }
  return store;
}

WeightStore WeightStore::open_folder(const std::string& dir) {
  const std::string index_path = dir + "/model.safetensors.index.json";
  if (!file_exists(index_path)) {
    WeightStore s = open_files({dir + "/model.safetensors"});
    s.where_ = dir;
    return s;
  }
  json index;
  try {
    index = json::parse(read_text_file(index_path));
  } catch (const json::exception& e) {
    fail(ErrorCode::kCorrupt, "'" + index_path + "' is not valid JSON: " + e.what());
  }
  if (!index.contains("weight_map") || !index["weight_map"].is_object()) {
    fail(ErrorCode::kCorrupt, "'" + index_path + "' has no weight_map object");
  }
  std::vector<std::string> shards;
  std::set<std::string> seen;
  for (auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string()) fail(ErrorCode::kCorrupt, index_path + ": bad entry for " + name);
    const std::string f = file.get<std::string>();
    if (f.find('/') != std::string::npos || f.empty() || f[0] == '.') {
      fail(ErrorCode::kCorrupt, index_path + ": shard name '" + f + "' is not a plain file name");
    }
    if (seen.insert(f).second) shards.push_back(dir + "/" + f);
  }
  WeightStore s = open_files(shards);
  s.where_ = dir;
  for (auto& [name, file] : index["weight_map"].items()) {
    auto it = s.index_.find(name);
    if (it == s.index_.end() || it->second->file != dir + "/" + file.get<std::string>()) {
      fail(ErrorCode::kCorrupt, index_path + " says tensor '" + name + "' is in '" +
                                    file.get<std::string>() + "', but it is not there");
    }
  }
  return s;
}

const TensorView& WeightStore::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    fail(ErrorCode::kNotFound, "weight '" + name + "' is missing from " + where_ +
                                   (packed_.count(name) ? " (it is stored pre-packed)" : ""));
  }
  return *it->second;
}

std::vector<std::string> WeightStore::packed_names() const {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : packed_) names.push_back(name);
  return names;
}

const PackedTensor* WeightStore::packed(const std::string& name) const {
  auto it = packed_.find(name);
  return it == packed_.end() ? nullptr : &it->second;
}

void WeightStore::declare_packed(const std::string& name, ops::QuantType type, int64_t rows,
                                 int64_t cols) {
  const TensorView& t = get(name);
  const std::string what = "packed tensor '" + name + "' in '" + t.file + "'";
  size_t need = 0;
  try {
    need = ops::packed_size_bytes(type, rows, cols);
  } catch (const Error& e) {
    fail(ErrorCode::kCorrupt, what + ": " + e.what());
  }
  if (t.dtype != DType::kU8 || t.shape.size() != 1) {
    fail(ErrorCode::kCorrupt, what + " has dtype " + dtype_name(t.dtype) + " and shape " +
                                  shape_string(t.shape) + ", expected raw bytes (U8, 1-D)");
  }
  if (t.nbytes != need) {
    fail(ErrorCode::kCorrupt, what + " has " + std::to_string(t.nbytes) + " bytes, but a " +
                                  ops::quant_type_name(type) + " " + std::to_string(rows) + "x" +
                                  std::to_string(cols) + " matrix needs " + std::to_string(need));
  }
  packed_[name] = PackedTensor{type, rows, cols, &t};
  index_.erase(name);
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  for (const auto& [name, view] : index_) out.push_back(name);
  return out;
}

size_t WeightStore::total_bytes() const {
  size_t n = 0;
  for (const auto& [name, view] : index_) n += view->nbytes;
  for (const auto& [name, p] : packed_) n += p.bytes->nbytes;
  return n;
}

}  // namespace qvl
