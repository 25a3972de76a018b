// Test-only GGUF writer: builds GGUF bytes (version 3, little-endian) from key/values and tensors,
// so reader tests can make valid files and damage them on purpose, and loader tests can write a
// model in llama.cpp's layout.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/gguf_file.h"
#include "model/gguf_types.h"

namespace qvl::testing {

class GgufBuilder {
 public:
  // Scalars.
  void u32(const std::string& key, uint32_t v) { scalar(key, GgufValueType::kU32, &v, 4); }
  void i32(const std::string& key, int32_t v) { scalar(key, GgufValueType::kI32, &v, 4); }
  void u64(const std::string& key, uint64_t v) { scalar(key, GgufValueType::kU64, &v, 8); }
  void f32(const std::string& key, float v) { scalar(key, GgufValueType::kF32, &v, 4); }
  void f64(const std::string& key, double v) { scalar(key, GgufValueType::kF64, &v, 8); }
  void boolean(const std::string& key, bool v) {
    const uint8_t b = v ? 1 : 0;
    scalar(key, GgufValueType::kBool, &b, 1);
  }
  void u8(const std::string& key, uint8_t v) { scalar(key, GgufValueType::kU8, &v, 1); }
  void i8(const std::string& key, int8_t v) { scalar(key, GgufValueType::kI8, &v, 1); }
  void u16(const std::string& key, uint16_t v) { scalar(key, GgufValueType::kU16, &v, 2); }
  void i16(const std::string& key, int16_t v) { scalar(key, GgufValueType::kI16, &v, 2); }
  void i64(const std::string& key, int64_t v) { scalar(key, GgufValueType::kI64, &v, 8); }
  void string(const std::string& key, const std::string& v) {
    header(key, GgufValueType::kString);
    str(kv_, v);
    ++n_kv_;
  }
  // Arrays.
  void strings(const std::string& key, const std::vector<std::string>& v) {
    array_header(key, GgufValueType::kString, v.size());
    for (const auto& s : v) str(kv_, s);
  }
  void i32s(const std::string& key, const std::vector<int32_t>& v) {
    array_header(key, GgufValueType::kI32, v.size());
    for (int32_t x : v) put(kv_, &x, 4);
  }
  void f32s(const std::string& key, const std::vector<float>& v) {
    array_header(key, GgufValueType::kF32, v.size());
    for (float x : v) put(kv_, &x, 4);
  }
  void bools(const std::string& key, const std::vector<bool>& v) {
    array_header(key, GgufValueType::kBool, v.size());
    for (bool b : v) kv_.push_back(b ? 1 : 0);
  }
  // A tensor: dims in ggml order (dims[0] = row length); bytes as stored.
  void tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& dims,
              std::vector<uint8_t> bytes) {
    tensors_.push_back({name, type, dims, std::move(bytes)});
  }

  // alignment 0 writes no general.alignment key (the default 32 applies).
  std::vector<uint8_t> bytes(uint32_t alignment = 0, uint32_t version = 3) const {
    const uint64_t align = alignment ? alignment : 32;
    std::vector<uint8_t> out;
    put32(out, 0x46554747);
    put32(out, version);
    put64(out, tensors_.size());
    put64(out, n_kv_ + (alignment ? 1 : 0));
    out.insert(out.end(), kv_.begin(), kv_.end());
    if (alignment) {
      str(out, "general.alignment");
      put32(out, static_cast<uint32_t>(GgufValueType::kU32));
      put32(out, alignment);
    }
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
      str(out, t.name);
      put32(out, static_cast<uint32_t>(t.dims.size()));
      for (int64_t d : t.dims) put64(out, static_cast<uint64_t>(d));
      put32(out, static_cast<uint32_t>(t.type));
      put64(out, offset);
      offset += (t.bytes.size() + align - 1) / align * align;
    }
    while (out.size() % align) out.push_back(0);
    for (const Tensor& t : tensors_) {
      out.insert(out.end(), t.bytes.begin(), t.bytes.end());
      while (out.size() % align) out.push_back(0);
    }
    return out;
  }

  void write(const std::string& path, uint32_t alignment = 0) const {
    const std::vector<uint8_t> b = bytes(alignment);
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    if (!f) fail(ErrorCode::kIo, "cannot write " + path);
  }

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> bytes;
  };
  static void put(std::vector<uint8_t>& out, const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  static void put32(std::vector<uint8_t>& out, uint32_t v) { put(out, &v, 4); }
  static void put64(std::vector<uint8_t>& out, uint64_t v) { put(out, &v, 8); }
  static void str(std::vector<uint8_t>& out, const std::string& s) {
    put64(out, s.size());
    put(out, s.data(), s.size());
  }
  void header(const std::string& key, GgufValueType t) {
    str(kv_, key);
    put32(kv_, static_cast<uint32_t>(t));
  }
  void scalar(const std::string& key, GgufValueType t, const void* v, size_t n) {
    header(key, t);
    put(kv_, v, n);
    ++n_kv_;
  }
  void array_header(const std::string& key, GgufValueType t, size_t n) {
    header(key, GgufValueType::kArray);
    put32(kv_, static_cast<uint32_t>(t));
    put64(kv_, n);
    ++n_kv_;
  }

  std::vector<uint8_t> kv_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

// Raw bytes of floats / halves for tensor payloads.
inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
inline std::vector<uint8_t> u16_bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace qvl::testing
