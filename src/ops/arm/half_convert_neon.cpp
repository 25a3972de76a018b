// NEON half conversions (see half_convert_neon.h). FCVTN/FCVTL follow FPCR, whose Linux default
// (round to nearest even, no flush to zero, NaN payloads propagated) gives the scalar results for
// every number and infinity; only NaNs need fixing up to match the scalar code bit for bit.
#include "ops/arm/half_convert_neon.h"

#include <arm_neon.h>

#include <cstring>

namespace qvl::ops {
namespace {

// Eight floats to halves. The hardware keeps a NaN's sign and top payload bits; the scalar code
// returns sign | 0x7e00, so NaN lanes drop their low 9 payload bits (the quiet bit is already set).
uint16x8_t to_f16(float32x4_t lo, float32x4_t hi) {
  const uint16x8_t h = vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(lo), hi));
  const uint16x8_t nan = vcgtq_u16(vandq_u16(h, vdupq_n_u16(0x7fff)), vdupq_n_u16(0x7c00));
  return vbicq_u16(h, vandq_u16(nan, vdupq_n_u16(0x01ff)));
}

// Four halves to floats. The hardware quiets a signalling NaN (sets bit 22); the scalar code
// only widens the payload, so NaN lanes take bit 22 from the half's bit 9.
float32x4_t to_f32(uint16x4_t h) {
  const float32x4_t f = vcvt_f32_f16(vreinterpret_f16_u16(h));
  const uint16x4_t nan = vcgt_u16(vand_u16(h, vdup_n_u16(0x7fff)), vdup_n_u16(0x7c00));
  const uint32x4_t quiet_bit = vandq_u32(
      vreinterpretq_u32_s32(vmovl_s16(vreinterpret_s16_u16(nan))), vdupq_n_u32(0x00400000));
  return vreinterpretq_f32_u32(vbslq_u32(quiet_bit, vshll_n_u16(h, 13), vreinterpretq_u32_f32(f)));
}

}  // namespace

void f32_to_f16_neon(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vst1q_u16(out + i, to_f16(vld1q_f32(x + i), vld1q_f32(x + i + 4)));
  if (i < n) {  // the tail through a zero-padded copy: no access past n
    float in[8] = {};
    uint16_t h[8];
    std::memcpy(in, x + i, static_cast<size_t>(n - i) * sizeof(float));
    vst1q_u16(h, to_f16(vld1q_f32(in), vld1q_f32(in + 4)));
    std::memcpy(out + i, h, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}

void f16_to_f32_neon(const uint16_t* x, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint16x8_t h = vld1q_u16(x + i);
    vst1q_f32(out + i, to_f32(vget_low_u16(h)));
    vst1q_f32(out + i + 4, to_f32(vget_high_u16(h)));
  }
  if (i < n) {
    uint16_t in[8] = {};
    float f[8];
    std::memcpy(in, x + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
    vst1q_f32(f, to_f32(vld1_u16(in)));
    vst1q_f32(f + 4, to_f32(vld1_u16(in + 4)));
    std::memcpy(out + i, f, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace qvl::ops
