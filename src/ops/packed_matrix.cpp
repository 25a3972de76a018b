// PackedMatrix: conversion of weights into the packed layouts of packed_matrix.h and back.
#include "ops/packed_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "base/thread_pool.h"
#include "ops/packed_kernels.h"

namespace qvl::ops {
namespace {

using kernels::kCols;
using kernels::kRows;
using kernels::kScaleBytes;

// Bytes of one group (4 rows) over nb blocks.
int64_t group_bytes(QuantType type, int64_t nb) {
  switch (type) {
    case QuantType::kBF16:
      return nb * kernels::kBf16TileBytes;
    case QuantType::kQ8:
      return nb * (kScaleBytes + kernels::kQ8TileBytes);
    case QuantType::kQ4:
      return nb * (kScaleBytes + kernels::kQ4TileBytes);
    case QuantType::kExact:
    case QuantType::kQ8Strips:
    case QuantType::kQ4Strips:
      break;
  }
  fail(ErrorCode::kInternal, "group_bytes of an exact or strip matrix");
}

void check_shape(QuantType type, int64_t rows, int64_t cols) {
  // The bound keeps every byte offset far from overflow (2^40 weights is 1 TB of bf16).
  if (rows <= 0 || cols <= 0 || rows > (int64_t{1} << 40) / cols) {
    fail(ErrorCode::kUnsupported, std::string("cannot pack a ") + std::to_string(rows) + "x" +
                                      std::to_string(cols) + " matrix");
  }
  if (type != QuantType::kExact && cols % kCols != 0) {
    fail(ErrorCode::kUnsupported, std::string(quant_type_name(type)) + " needs columns in " +
                                      "multiples of 32, got " + std::to_string(cols));
  }
}

// Symmetric round-to-nearest quantization of one block against its fp16-rounded scale. Written
// to vectorise: packing the whole model at load time must take seconds, not minutes.
void quantize_block(const float* w, float qmax, uint16_t* scale_out, int8_t* q) {
  float amax = 0;
  for (int64_t j = 0; j < kCols; ++j) {
    const float a = std::fabs(w[j]);
    amax = a > amax ? a : amax;  // NaN never wins
  }
  const uint16_t scale = kernels::f32_to_f16(amax / qmax);
  const float step = f16_to_f32(scale);
  const float inv = step > 0 ? 1.0f / step : 0.0f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting rounds to even
  for (int64_t j = 0; j < kCols; ++j) {
    float r = (w[j] * inv + kRound) - kRound;
    r = r > qmax ? qmax : r;
    r = r >= -qmax ? r : -qmax;  // also maps NaN (from infinite weights) to a level
    q[j] = static_cast<int8_t>(static_cast<int>(r));
  }
  *scale_out = scale;
}

// Row r of source as fp32, or zeros past its last row (the padding of the last group or strip).
void source_row(const WeightRef& source, int64_t r, std::vector<float>& row) {
  if (r < source.rows) {
    weight_row_to_f32(source, r, row.data());
  } else {
    std::fill(row.begin(), row.end(), 0.0f);
  }
}

// Writes group g of the packed matrix: rows [4g, 4g + 4) of source (missing rows are zero).
void pack_group(const WeightRef& source, QuantType type, int64_t g, uint8_t* dst) {
  const int64_t cols = source.cols, nb = cols / kCols;
  std::vector<float> row(static_cast<size_t>(cols));
  uint8_t* data = type == QuantType::kBF16 ? dst : dst + nb * kScaleBytes;
  for (int64_t r = 0; r < kRows; ++r) {
    source_row(source, g * kRows + r, row);
    for (int64_t b = 0; b < nb; ++b) {
      const float* w = row.data() + b * kCols;
      if (type == QuantType::kBF16) {
        uint8_t* out = data + b * kernels::kBf16TileBytes + r * kCols * 2;
        for (int64_t j = 0; j < kCols; ++j) {
          const uint16_t h = f32_to_bf16(w[j]);
          std::memcpy(out + j * 2, &h, 2);
        }
        continue;
      }
      uint16_t scale;
      int8_t q[kCols];
      quantize_block(w, type == QuantType::kQ8 ? 127.0f : 7.0f, &scale, q);
      std::memcpy(dst + b * kScaleBytes + r * 2, &scale, 2);
      if (type == QuantType::kQ8) {
        std::memcpy(data + b * kernels::kQ8TileBytes + r * kCols, q, kCols);
      } else {
        uint8_t* out = data + b * kernels::kQ4TileBytes + r * (kCols / 2);
        for (int64_t j = 0; j < kCols / 2; ++j) {
          out[j] = static_cast<uint8_t>((q[j] + 8) | ((q[j + kCols / 2] + 8) << 4));
        }
      }
    }
  }
}

// Where strip layouts keep weight j of block b's row: its byte, and whether in the high nibble.
struct StripColumn {
  int64_t offset;
  bool high;
};
StripColumn strip_column(QuantType type, int64_t row_in_strip, int64_t j) {
  if (type == QuantType::kQ8Strips)
    return {(j / 4) * kStripRows * 4 + row_in_strip * 4 + j % 4, false};
  return {(j / 8) * kStripRows * 4 + row_in_strip * 4 + j % 4, j % 8 >= 4};
}

// Writes strip s of a kQ8Strips / kQ4Strips matrix: rows [32s, 32s + 32) of source (missing
// rows are zero).
void pack_strip(const WeightRef& source, QuantType type, int64_t s, uint8_t* dst) {
  const int64_t cols = source.cols, nb = cols / kCols;
  const bool q4 = type == QuantType::kQ4Strips;
  const int64_t block_bytes = strip_block_bytes(type), weight_bytes = q4 ? kCols / 2 : kCols;
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < kStripRows; ++r) {
    source_row(source, s * kStripRows + r, row);
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* block = dst + b * block_bytes;
      uint16_t scale;
      int8_t q[kCols];
      quantize_block(row.data() + b * kCols, q4 ? 7.0f : 127.0f, &scale, q);
      std::memcpy(block + kStripRows * weight_bytes + r * 2, &scale, 2);
      for (int64_t j = 0; j < kCols; ++j) {
        const StripColumn at = strip_column(type, r, j);
        if (!q4) {
          block[at.offset] = static_cast<uint8_t>(q[j] + 128);
        } else if (!at.high) {  // its byte also holds column j + 4 (the next quad) high
          block[at.offset] = static_cast<uint8_t>((q[j] + 8) | ((q[j + 4] + 8) << 4));
        }
      }
    }
  }
}

int64_t strip_count(int64_t rows) {
  return (rows + kStripRows - 1) / kStripRows;
}

}  // namespace

const char* quant_type_name(QuantType type) {
  switch (type) {
    case QuantType::kExact:
      return "exact";
    case QuantType::kBF16:
      return "bf16";
    case QuantType::kQ8:
      return "q8";
    case QuantType::kQ4:
      return "q4";
    case QuantType::kQ8Strips:
      return "q8-strips";
    case QuantType::kQ4Strips:
      return "q4-strips";
  }
  return "?";
}

QuantType values_type(QuantType type) {
  if (type == QuantType::kQ8Strips) return QuantType::kQ8;
  return type == QuantType::kQ4Strips ? QuantType::kQ4 : type;
}

const char* quant_values_name(QuantType type) {
  return quant_type_name(values_type(type));
}

QuantType parse_quant_type(const std::string& name) {
  for (QuantType t : {QuantType::kExact, QuantType::kBF16, QuantType::kQ8, QuantType::kQ4}) {
    if (name == quant_type_name(t)) return t;
  }
  fail(ErrorCode::kInvalidArgument,
       "unknown quantization '" + name + "' (expected exact, bf16, q8 or q4)");
}

size_t packed_size_bytes(QuantType type, int64_t rows, int64_t cols) {
  if (type == QuantType::kExact) fail(ErrorCode::kInvalidArgument, "exact matrices are not packed");
  check_shape(type, rows, cols);
  if (in_strips(type)) {
    return static_cast<size_t>(strip_count(rows) * (cols / kCols) * strip_block_bytes(type));
  }
  const int64_t groups = (rows + kRows - 1) / kRows;
  return static_cast<size_t>(groups * group_bytes(type, cols / kCols));
}

PackedMatrix PackedMatrix::pack(const WeightRef& source, QuantType type) {
  check_shape(type, source.rows, source.cols);
  if (source.data == nullptr) fail(ErrorCode::kInvalidArgument, "cannot pack a null weight");
  PackedMatrix m;
  m.type_ = type;
  m.rows_ = source.rows;
  m.cols_ = source.cols;
  if (type == QuantType::kExact) {
    m.exact_ = source;
    m.bytes_ = source.data;
    m.size_ = static_cast<size_t>(source.rows * source.cols) * weight_type_size(source.type);
    return m;
  }
  m.size_ = packed_size_bytes(type, source.rows, source.cols);
  m.owned_.resize(m.size_);
  m.bytes_ = m.owned_.data();
  if (in_strips(type)) {
    const int64_t strip_bytes = source.cols / kCols * strip_block_bytes(type);
    ThreadPool::global().parallel_for(
        static_cast<size_t>(strip_count(source.rows)), [&](size_t s0, size_t s1) {
          for (auto s = static_cast<int64_t>(s0); s < static_cast<int64_t>(s1); ++s) {
            pack_strip(source, type, s, m.owned_.data() + s * strip_bytes);
          }
        });
    return m;
  }
  const int64_t gbytes = group_bytes(type, source.cols / kCols);
  uint8_t* dst = m.owned_.data();
  const size_t groups = static_cast<size_t>((source.rows + kRows - 1) / kRows);
  ThreadPool::global().parallel_for(groups, [&](size_t g0, size_t g1) {
    for (size_t g = g0; g < g1; ++g) {
      pack_group(source, type, static_cast<int64_t>(g), dst + static_cast<int64_t>(g) * gbytes);
    }
  });
  return m;
}

PackedMatrix PackedMatrix::view(QuantType type, int64_t rows, int64_t cols, const void* bytes,
                                size_t size) {
  check_shape(type, rows, cols);
  const size_t expected = type == QuantType::kExact ? static_cast<size_t>(rows * cols) * 4
                                                    : packed_size_bytes(type, rows, cols);
  if (bytes == nullptr || size != expected) {
    fail(ErrorCode::kInvalidArgument,
         std::string(quant_type_name(type)) + " " + std::to_string(rows) + "x" +
             std::to_string(cols) + " matrix needs " + std::to_string(expected) + " bytes, got " +
             std::to_string(bytes == nullptr ? 0 : size));
  }
  PackedMatrix m;
  m.type_ = type;
  m.rows_ = rows;
  m.cols_ = cols;
  m.bytes_ = bytes;
  m.size_ = size;
  if (type == QuantType::kExact) m.exact_ = WeightRef{WeightType::kF32, bytes, rows, cols};
  return m;
}

void PackedMatrix::row_to_f32(int64_t r, float* out) const {
  if (r < 0 || r >= rows_) {
    fail(ErrorCode::kInvalidArgument,
         "row " + std::to_string(r) + " out of range [0, " + std::to_string(rows_) + ")");
  }
  if (type_ == QuantType::kExact) {
    weight_row_to_f32(exact_, r, out);
    return;
  }
  const int64_t nb = cols_ / kCols;
  if (type_ != QuantType::kBF16) {
    for (int64_t b = 0; b < nb; ++b) {
      int32_t q[kCols];
      float scale;
      block_q(r, b, q, &scale);
      for (int64_t j = 0; j < kCols; ++j) out[b * kCols + j] = scale * static_cast<float>(q[j]);
    }
    return;
  }
  const auto* group = static_cast<const uint8_t*>(bytes_) + (r / kRows) * group_bytes(type_, nb);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* src = group + b * kernels::kBf16TileBytes + r % kRows * kCols * 2;
    for (int64_t j = 0; j < kCols; ++j) {
      uint16_t h;
      std::memcpy(&h, src + j * 2, 2);
      out[b * kCols + j] = bf16_to_f32(h);
    }
  }
}

void PackedMatrix::block_q(int64_t r, int64_t b, int32_t* q, float* scale) const {
  QVL_CHECK(values_type(type_) == QuantType::kQ8 || values_type(type_) == QuantType::kQ4);
  QVL_CHECK(r >= 0 && r < rows_ && b >= 0 && b < cols_ / kCols);
  const auto* bytes = static_cast<const uint8_t*>(bytes_);
  const int64_t nb = cols_ / kCols;
  uint16_t h;
  if (in_strips(type_)) {
    const int64_t in_strip = r % kStripRows, block_bytes = strip_block_bytes(type_);
    const uint8_t* block = bytes + (r / kStripRows * nb + b) * block_bytes;
    const int64_t weight_bytes = type_ == QuantType::kQ4Strips ? kCols / 2 : kCols;
    std::memcpy(&h, block + kStripRows * weight_bytes + in_strip * 2, 2);
    for (int64_t j = 0; j < kCols; ++j) {
      const StripColumn at = strip_column(type_, in_strip, j);
      const int v = block[at.offset];
      q[j] = type_ == QuantType::kQ8Strips ? v - 128 : (at.high ? v >> 4 : v & 0x0f) - 8;
    }
    *scale = f16_to_f32(h);
    return;
  }
  const int64_t in_group = r % kRows;
  const uint8_t* group = bytes + (r / kRows) * group_bytes(type_, nb);
  std::memcpy(&h, group + b * kScaleBytes + in_group * 2, 2);
  *scale = f16_to_f32(h);
  const uint8_t* data = group + nb * kScaleBytes;
  if (type_ == QuantType::kQ8) {
    const auto* src =
        reinterpret_cast<const int8_t*>(data + b * kernels::kQ8TileBytes) + in_group * kCols;
    for (int64_t j = 0; j < kCols; ++j) q[j] = src[j];
    return;
  }
  const uint8_t* src = data + b * kernels::kQ4TileBytes + in_group * (kCols / 2);
  for (int64_t j = 0; j < kCols / 2; ++j) {
    q[j] = (src[j] & 0x0f) - 8;
    q[j + kCols / 2] = (src[j] >> 4) - 8;
  }
}

}  // namespace qvl::ops
