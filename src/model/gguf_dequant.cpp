#include "model/gguf_dequant.h"

#include <cstring>
#include <string>

#include "base/error.h"
#include "base/half.h"

namespace qvl {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// Q8_0: fp16 d, 32 x int8; value = q * d.
void q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// Q4_0: fp16 d, 16 bytes; byte j holds element j (low nibble) and j + 16 (high), each q + 8.
void q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((b[2 + j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
  }
}

// Q4_1: fp16 d, fp16 m, 16 bytes of nibbles as Q4_0 but unsigned; value = q * d + m.
void q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(b[4 + j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
  }
}

// Q5_0 / Q5_1: Q4_0 / Q4_1 nibbles plus a fifth bit per element in a 32-bit mask (bit j for
// element j); Q5_0 is signed (q - 16), Q5_1 has a min.
void q5(const uint8_t* b, float* y, bool with_min) {
  const float d = half_at(b), m = with_min ? half_at(b + 2) : 0.0f;
  const uint8_t* p = b + (with_min ? 4 : 2);
  uint32_t qh;
  std::memcpy(&qh, p, 4);
  const uint8_t* qs = p + 4;
  const int offset = with_min ? 0 : 16;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
    const int hi = (qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
    if (with_min) {
      y[j] = static_cast<float>(lo) * d + m;
      y[j + 16] = static_cast<float>(hi) * d + m;
    } else {
      y[j] = static_cast<float>(lo - offset) * d;
      y[j + 16] = static_cast<float>(hi - offset) * d;
    }
  }
}

// The 6-bit scale and min of sub-block j (0..7) packed in the 12 scale bytes of Q4_K / Q5_K:
// sub-blocks 0..3 in the low 6 bits of bytes j and j + 4; 4..7 split between the nibbles of bytes
// j + 4 and the top 2 bits of bytes j - 4 (scale) and j (min).
void scale_min(int j, const uint8_t* s, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K (144 bytes per 256): fp16 d, fp16 dmin, 12 scale bytes, 128 bytes of nibbles. Each 64
// elements use 32 bytes: the low nibbles are sub-block 2i, the high ones 2i + 1; value =
// d * scale * q - dmin * min. Q5_K (176 bytes) adds 32 bytes of fifth bits after the scales:
// bit 2i of byte l for element l of sub-block 2i, bit 2i + 1 for sub-block 2i + 1.
void k_quant_4_5(const uint8_t* b, float* y, bool five) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + (five ? 48 : 16);
  for (int i = 0; i < 4; ++i) {
    int sc, mn;
    scale_min(2 * i, scales, &sc, &mn);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
    scale_min(2 * i + 1, scales, &sc, &mn);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(mn);
    for (int l = 0; l < 32; ++l) {
      const int hi1 = five && (qh[l] & (1u << (2 * i))) ? 16 : 0;
      y[l] = d1 * static_cast<float>((q[l] & 0x0F) + hi1) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      const int hi2 = five && (qh[l] & (2u << (2 * i))) ? 16 : 0;
      y[32 + l] = d2 * static_cast<float>((q[l] >> 4) + hi2) - m2;
    }
    q += 32;
    y += 64;
  }
}

// Q6_K (210 bytes per 256): 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8
// scales (one per 16 elements), fp16 d; value = d * scale * (q - 32). Each half of 128 elements
// takes 64 low bytes, 32 high bytes and 8 scales: element l + 32k (k = 0..3, l < 32) has its low
// nibble in byte l (k even) or l + 32 (k odd), low half for k < 2, and bits 2k..2k+1 of byte l.
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

}  // namespace

bool gguf_can_dequantize(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}

void gguf_dequantize(GgmlType type, const uint8_t* src, int64_t n, float* out) {
  const auto info = ggml_type_info(static_cast<uint32_t>(type));
  if (!info || !gguf_can_dequantize(type)) {
    fail(ErrorCode::kUnsupported, std::string("qvl cannot read GGUF tensors of type ") +
                                      (info ? info->name : "?") +
                                      " (it reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
                                      "Q4_K, Q5_K and Q6_K)");
  }
  if (n < 0 || n % info->block_elems != 0) {
    fail(ErrorCode::kInvalidArgument,
         std::to_string(n) + " elements are not whole " + info->name + " blocks");
  }
  const int64_t blocks = n / info->block_elems;
  const int64_t be = info->block_elems, bb = info->block_bytes;
  switch (type) {
    case GgmlType::kF32:
      if (n > 0) std::memcpy(out, src, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = type == GgmlType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    default:
      break;
  }
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t* b = src + i * bb;
    float* y = out + i * be;
    switch (type) {
      case GgmlType::kQ8_0:
        q8_0(b, y);
        break;
      case GgmlType::kQ4_0:
        q4_0(b, y);
        break;
      case GgmlType::kQ4_1:
        q4_1(b, y);
        break;
      case GgmlType::kQ5_0:
        q5(b, y, false);
        break;
      case GgmlType::kQ5_1:
        q5(b, y, true);
        break;
      case GgmlType::kQ4_K:
        k_quant_4_5(b, y, false);
        break;
      case GgmlType::kQ5_K:
        k_quant_4_5(b, y, true);
        break;
      case GgmlType::kQ6_K:
        q6_k(b, y);
        break;
      default:
        fail(ErrorCode::kInternal, "unhandled GGUF type");
    }
  }
}

}  // namespace qvl
