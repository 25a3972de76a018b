// Portable kernels: the fallback on any CPU and the oracle the SIMD kernels are tested against.
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "ops/packed_kernels.h"

namespace qvl::ops::kernels {

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN stays a quiet NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (magnitude >= 0x38800000u) {                       // normal half (>= 2^-14)
    uint32_t rebiased = magnitude - 0x38000000u;        // exponent bias 127 -> 15
    rebiased += 0x0fffu + ((rebiased >> 13) & 1u);      // round the 13 dropped bits to even
    return static_cast<uint16_t>(sign | (rebiased >> 13));
  }
  // Subnormal half: a multiple of 2^-24 (the scaling is exact, nearbyint rounds to even).
  float value;
  std::memcpy(&value, &magnitude, sizeof value);
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(value * 0x1p24f)));
}

void quantize_row_to_scalar(const float* x, int64_t nb, int32_t qmax, int8_t* q, float* scale,
                            int32_t* sum) {
  const auto top = static_cast<float>(qmax);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kCols;
    float amax = 0;
    for (int64_t j = 0; j < kCols; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float inv = amax > 0 ? top / amax : 0.0f;
    int32_t total = 0;
    for (int64_t j = 0; j < kCols; ++j) {
      const float r = std::fmin(std::fmax(std::nearbyint(xb[j] * inv), -top), top);
      q[b * kCols + j] = static_cast<int8_t>(r);
      total += static_cast<int32_t>(r);
    }
    scale[b] = amax / top;
    sum[b] = total;
  }
}

void quantize_row_scalar(const float* x, int64_t nb, int8_t* q, float* scale, int32_t* sum) {
  quantize_row_to_scalar(x, nb, 127, q, scale, sum);
}

void bf16_group_scalar(const GroupSpan& w, const void* x, float* out) {
  const float* xf = static_cast<const float*>(x);
  float acc[kRows] = {0, 0, 0, 0};
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = w.data + b * kBf16TileBytes;
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t j = 0; j < kCols; ++j) {
        uint16_t h;
        std::memcpy(&h, tile + (r * kCols + j) * 2, 2);
        acc[r] += bf16_to_f32(h) * xf[b * kCols + j];
      }
    }
  }
  for (int64_t r = 0; r < kRows; ++r) out[r] = acc[r];
}

namespace {
float scale_at(const uint8_t* scales, int64_t b, int64_t r) {
  uint16_t h;
  std::memcpy(&h, scales + b * kScaleBytes + r * 2, 2);
  return f16_to_f32(h);
}
}  // namespace

void q8_group_scalar(const GroupSpan& w, const QuantX& x, float* out) {
  const auto* data = reinterpret_cast<const int8_t*>(w.data);
  float acc[kRows] = {0, 0, 0, 0};
  for (int64_t b = 0; b < w.nb; ++b) {
    const int8_t* tile = data + b * kQ8TileBytes;
    const int8_t* xb = x.q + b * kCols;
    for (int64_t r = 0; r < kRows; ++r) {
      int32_t dot = 0;
      for (int64_t j = 0; j < kCols; ++j) dot += tile[r * kCols + j] * xb[j];
      acc[r] += static_cast<float>(dot) * (scale_at(w.scales, b, r) * x.scale[b]);
    }
  }
  for (int64_t r = 0; r < kRows; ++r) out[r] = acc[r];
}

void q4_group_scalar(const GroupSpan& w, const QuantX& x, float* out) {
  const uint8_t* data = w.data;
  float acc[kRows] = {0, 0, 0, 0};
  for (int64_t b = 0; b < w.nb; ++b) {
    const uint8_t* tile = data + b * kQ4TileBytes;
    const int8_t* xb = x.q + b * kCols;
    for (int64_t r = 0; r < kRows; ++r) {
      int32_t dot = 0;
      for (int64_t j = 0; j < kCols / 2; ++j) {
        const uint8_t packed = tile[r * (kCols / 2) + j];
        dot += ((packed & 0x0f) - 8) * xb[j] + ((packed >> 4) - 8) * xb[j + kCols / 2];
      }
      acc[r] += static_cast<float>(dot) * (scale_at(w.scales, b, r) * x.scale[b]);
    }
  }
  for (int64_t r = 0; r < kRows; ++r) out[r] = acc[r];
}

// Whole-row runs on the scalar kernels: every (x row, group) pair on its own.
namespace {
GroupSpan whole_group(const GroupRun& w, int g) {
  const uint8_t* group = w.first + g * w.group_bytes;
  return {group, group + w.scale_bytes, w.nb};
}
QuantX quant_row(const QuantX& x, int i) {
  const int64_t b = i * x.stride_blocks;
  return {x.q + b * kCols, x.scale + b, x.sum + b, x.stride_blocks, x.scaled_sum + b};
}
}  // namespace

void bf16_run_scalar(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out) {
  for (int i = 0; i < nx; ++i) {
    for (int g = 0; g < w.count; ++g) {
      bf16_group_scalar(whole_group(w, g), static_cast<const uint8_t*>(x) + i * x_stride,
                        out + (i * w.count + g) * kRows);
    }
  }
}

void q8_run_scalar(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for (int i = 0; i < nx; ++i) {
    for (int g = 0; g < w.count; ++g) {
      q8_group_scalar(whole_group(w, g), quant_row(x, i), out + (i * w.count + g) * kRows);
    }
  }
}

void q4_run_scalar(const GroupRun& w, const QuantX& x, int nx, float* out) {
  for (int i = 0; i < nx; ++i) {
    for (int g = 0; g < w.count; ++g) {
      q4_group_scalar(whole_group(w, g), quant_row(x, i), out + (i * w.count + g) * kRows);
    }
  }
}

}  // namespace qvl::ops::kernels
