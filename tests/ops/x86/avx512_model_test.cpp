// The scalar model of AVX-512 intrinsics (avx512_model.inc) against real instructions where this
// CPU has them: each lane-local 512-bit operation must act on both 256-bit halves as its AVX2 /
// F16C / FMA counterpart does (the same per-128-bit-lane or per-element definition), and vpdpbusd
// as an exact widening of bytes. Evidence that the model reads the Intrinsics Guide as the hardware
// does, for the operations it shares with AVX2.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "base/half.h"
#include "ops/x86/cpuid_features.h"
#include "ops/x86/target_isa.h"

// Some AVX-512 intrinsics are macros when not optimising; the model defines functions of the names.
#undef _mm512_srli_epi16
#undef _mm512_shuffle_i32x4
#undef _mm512_shuffle_epi32

namespace qvl::ops::avx512_model_check {
namespace model {
#include "avx512_model.inc"
}  // namespace model
namespace {

// The real operations on one 256-bit half, through memory. Only plain functions under the target
// pragma, so no template or library function is instantiated for AVX2 here.
QVL_TARGET_ISA_PUSH("avx2,fma,f16c")

enum class IntOp {
  kUnpackLo32,
  kUnpackHi32,
  kUnpackLo64,
  kUnpackHi64,
  kAdd32,
  kAnd,
  kXor,
  kSrl16By4,
  kShuffle32Bbbb,
  kDpbusd,
  kSub32
};
constexpr IntOp kIntOps[] = {IntOp::kUnpackLo32, IntOp::kUnpackHi32, IntOp::kUnpackLo64,
                             IntOp::kUnpackHi64, IntOp::kAdd32,      IntOp::kAnd,
                             IntOp::kXor,        IntOp::kSrl16By4,   IntOp::kShuffle32Bbbb,
                             IntOp::kDpbusd,     IntOp::kSub32};

void real_int_op(IntOp op, const void* a_bytes, const void* b_bytes, void* out) {
  const ::__m256i a = _mm256_loadu_si256(static_cast<const ::__m256i*>(a_bytes));
  const ::__m256i b = _mm256_loadu_si256(static_cast<const ::__m256i*>(b_bytes));
  ::__m256i r = a;
  switch (op) {
    case IntOp::kUnpackLo32:
      r = _mm256_unpacklo_epi32(a, b);
      break;
    case IntOp::kUnpackHi32:
      r = _mm256_unpackhi_epi32(a, b);
      break;
    case IntOp::kUnpackLo64:
      r = _mm256_unpacklo_epi64(a, b);
      break;
    case IntOp::kUnpackHi64:
      r = _mm256_unpackhi_epi64(a, b);
      break;
    case IntOp::kAdd32:
      r = _mm256_add_epi32(a, b);
      break;
    case IntOp::kAnd:
      r = _mm256_and_si256(a, b);
      break;
    case IntOp::kXor:
      r = _mm256_xor_si256(a, b);
      break;
    case IntOp::kSrl16By4:
      r = _mm256_srli_epi16(a, 4);
      break;
    case IntOp::kShuffle32Bbbb:
      r = _mm256_shuffle_epi32(a, 0x55);
      break;
    case IntOp::kSub32:
      r = _mm256_sub_epi32(a, b);
      break;
    case IntOp::kDpbusd: {  // unsigned a times signed b, widened to 16 bit (vpmaddwd is exact)
      const ::__m256i low8 = _mm256_set1_epi16(0x00ff);
      const ::__m256i a_even = _mm256_and_si256(a, low8), a_odd = _mm256_srli_epi16(a, 8);
      const ::__m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
      const ::__m256i b_odd = _mm256_srai_epi16(b, 8);
      r = _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even), _mm256_madd_epi16(a_odd, b_odd));
      break;
    }
  }
  _mm256_storeu_si256(static_cast<::__m256i*>(out), r);
}

// a * b, fma(a, b, c), float(int32 ints), cvtph(8 halfs), on 8 lanes.
void real_float_ops(const float* a, const float* b, const float* c, const void* ints,
                    const void* halfs, float out[4][8]) {
  const ::__m256 av = _mm256_loadu_ps(a), bv = _mm256_loadu_ps(b);
  _mm256_storeu_ps(out[0], _mm256_mul_ps(av, bv));
  _mm256_storeu_ps(out[1], _mm256_fmadd_ps(av, bv, _mm256_loadu_ps(c)));
  _mm256_storeu_ps(out[2],
                   _mm256_cvtepi32_ps(_mm256_loadu_si256(static_cast<const ::__m256i*>(ints))));
  _mm256_storeu_ps(out[3], _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const ::__m128i*>(halfs))));
}

void real_set1_epi32(int a, void* out) {
  _mm256_storeu_si256(static_cast<::__m256i*>(out), _mm256_set1_epi32(a));
}

void real_broadcast_128(const void* a, void* out) {
  _mm256_storeu_si256(
      static_cast<::__m256i*>(out),
      _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const ::__m128i*>(a))));
}

QVL_TARGET_ISA_POP

model::__m512i model_int_op(IntOp op, model::__m512i a, model::__m512i b) {
  switch (op) {
    case IntOp::kUnpackLo32:
      return model::_mm512_unpacklo_epi32(a, b);
    case IntOp::kUnpackHi32:
      return model::_mm512_unpackhi_epi32(a, b);
    case IntOp::kUnpackLo64:
      return model::_mm512_unpacklo_epi64(a, b);
    case IntOp::kUnpackHi64:
      return model::_mm512_unpackhi_epi64(a, b);
    case IntOp::kAdd32:
      return model::_mm512_add_epi32(a, b);
    case IntOp::kAnd:
      return model::_mm512_and_si512(a, b);
    case IntOp::kXor:
      return model::_mm512_xor_si512(a, b);
    case IntOp::kSrl16By4:
      return model::_mm512_srli_epi16(a, 4);
    case IntOp::kShuffle32Bbbb:
      return model::_mm512_shuffle_epi32(a, model::_MM_PERM_BBBB);
    case IntOp::kDpbusd:
      return model::_mm512_dpbusd_epi32(model::_mm512_setzero_si512(), a, b);
    case IntOp::kSub32:
      return model::_mm512_sub_epi32(a, b);
  }
  return a;
}

template <class V>
V random_bytes(std::mt19937& rng) {
  V v;
  for (uint8_t& byte : v.b) byte = static_cast<uint8_t>(rng());
  return v;
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         qvl::ops::arch::cpuid_has_f16c();
}

TEST(Avx512Model, LaneLocalIntegerOpsActAsTheirAvx2Counterparts) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2+FMA+F16C: nothing to compare with";
  std::mt19937 rng(7);
  for (IntOp op : kIntOps) {
    for (int t = 0; t < 100; ++t) {
      const auto a = random_bytes<model::__m512i>(rng), b = random_bytes<model::__m512i>(rng);
      const model::__m512i got = model_int_op(op, a, b);
      for (int h = 0; h < 2; ++h) {
        uint8_t want[32];
        real_int_op(op, a.b + 32 * h, b.b + 32 * h, want);
        ASSERT_EQ(std::memcmp(got.b + 32 * h, want, 32), 0) << "op " << static_cast<int>(op);
      }
    }
  }
  for (int t = 0; t < 100; ++t) {
    const auto a = random_bytes<model::__m128i>(rng);
    const model::__m512i got = model::_mm512_broadcast_i32x4(a);
    uint8_t want[32];
    real_broadcast_128(a.b, want);
    EXPECT_EQ(std::memcmp(got.b, want, 32), 0);
    EXPECT_EQ(std::memcmp(got.b + 32, want, 32), 0);
  }
  for (int t = 0; t < 100; ++t) {
    const auto a = static_cast<int>(rng());
    const model::__m512i got = model::_mm512_set1_epi32(a);
    uint8_t want[32];
    real_set1_epi32(a, want);
    EXPECT_EQ(std::memcmp(got.b, want, 32), 0);
    EXPECT_EQ(std::memcmp(got.b + 32, want, 32), 0);
  }
}

TEST(Avx512Model, FloatOpsActAsTheirAvx2Counterparts) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2+FMA+F16C: nothing to compare with";
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 100.0f);
  for (int t = 0; t < 100; ++t) {
    model::__m512 a, b, c;
    for (int l = 0; l < 16; ++l) a.f[l] = dist(rng), b.f[l] = dist(rng), c.f[l] = dist(rng);
    const auto ints = random_bytes<model::__m512i>(rng);
    const auto halfs = random_bytes<model::__m256i>(rng);
    const model::__m512 got[] = {model::_mm512_mul_ps(a, b), model::_mm512_fmadd_ps(a, b, c),
                                 model::_mm512_cvtepi32_ps(ints), model::_mm512_cvtph_ps(halfs)};
    for (int h = 0; h < 2; ++h) {
      float want[4][8];
      real_float_ops(a.f + 8 * h, b.f + 8 * h, c.f + 8 * h, ints.b + 32 * h, halfs.b + 16 * h,
                     want);
      for (int op = 0; op < 4; ++op) {
        for (int l = 0; l < 8; ++l) {
          const float m = got[op].f[8 * h + l], r = want[op][l];
          // By bits, except NaN payloads from random halves (weight scales are never NaN).
          EXPECT_TRUE(std::memcmp(&m, &r, 4) == 0 || (std::isnan(m) && std::isnan(r)))
              << "float op " << op << ": " << m << " vs " << r;
        }
      }
    }
  }
}

TEST(Avx512Model, PermutesMasksAndCrossLaneShufflesFollowTheGuide) {
  // No AVX2 counterpart: the Intrinsics Guide's definitions on known inputs.
  model::__m512 v;
  for (int l = 0; l < 16; ++l) v.f[l] = static_cast<float>(l);
  model::__m512i idx;
  for (int l = 0; l < 16; ++l) idx.set<int32_t>(l, 15 - l + 16);  // only the low 4 bits count
  const model::__m512 reversed = model::_mm512_permutexvar_ps(idx, v);
  for (int l = 0; l < 16; ++l) EXPECT_EQ(reversed.f[l], static_cast<float>(15 - l));
  model::__m512i a, b;
  for (int l = 0; l < 16; ++l) a.set<int32_t>(l, l), b.set<int32_t>(l, 100 + l);
  // imm 0x88: a's 128-bit lanes 0, 2, then b's 0, 2; 0xdd: a's 1, 3, b's 1, 3.
  const model::__m512i even = model::_mm512_shuffle_i32x4(a, b, 0x88);
  const model::__m512i odd = model::_mm512_shuffle_i32x4(a, b, 0xdd);
  const int even_lanes[4] = {0, 8, 100, 108}, odd_lanes[4] = {4, 12, 104, 112};
  for (int q = 0; q < 4; ++q) {
    for (int e = 0; e < 4; ++e) {
      EXPECT_EQ(even.get<int32_t>(4 * q + e), even_lanes[q] + e);
      EXPECT_EQ(odd.get<int32_t>(4 * q + e), odd_lanes[q] + e);
    }
  }
  const model::__m512i start = model::_mm512_maskz_set1_epi32(0x1111, -5);
  for (int l = 0; l < 16; ++l) EXPECT_EQ(start.get<int32_t>(l), l % 4 == 0 ? -5 : 0);
  float out[16];
  for (float& f : out) f = -1;
  model::_mm512_mask_storeu_ps(out, 0x00ff, v);
  for (int l = 0; l < 16; ++l) EXPECT_EQ(out[l], l < 8 ? static_cast<float>(l) : -1.0f);
}

model::__m512 lanes_of(float v) {
  return model::_mm512_set1_ps(v);
}
model::__m512bh bf16_lanes(uint16_t even, uint16_t odd) {  // every pair (even, odd)
  model::__m512bh v;
  for (int j = 0; j < 16; ++j) v.h[2 * j] = even, v.h[2 * j + 1] = odd;
  return v;
}
uint16_t bf16_of(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);  // exact for the values below
}

TEST(Avx512Model, Bf16ConversionFollowsTheGuide) {
  // Normal values: round to nearest even, as qvl's f32_to_bf16; lanes 0..15 from b, 16..31 from a.
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 10.0f);
  model::__m512 a, b;
  for (int t = 0; t < 100; ++t) {
    for (int l = 0; l < 16; ++l) a.f[l] = dist(rng), b.f[l] = dist(rng);
    const model::__m512bh got = model::_mm512_cvtne2ps_pbh(a, b);
    for (int j = 0; j < 32; ++j) {
      ASSERT_EQ(got.h[j], f32_to_bf16(j < 16 ? b.f[j] : a.f[j - 16])) << j;
    }
  }
  // Ties to even, denormals to signed zero, infinities kept, NaN made quiet.
  EXPECT_EQ(model::f32_to_bf16_model(1.0f + 0x1p-8f), 0x3f80);      // tie, even below
  EXPECT_EQ(model::f32_to_bf16_model(1.0f + 3 * 0x1p-8f), 0x3f82);  // tie, even above
  EXPECT_EQ(model::f32_to_bf16_model(-0x1p-140f), 0x8000);
  EXPECT_EQ(model::f32_to_bf16_model(INFINITY), 0x7f80);
  EXPECT_EQ(model::f32_to_bf16_model(std::bit_cast<float>(0x7f800001u)), 0x7fc0);
}

TEST(Avx512Model, Bf16DotFollowsTheSdm) {
  // Odd pair element first, each step rounded: 1 + 2^-30 rounds to 1, then - 1 gives 0 (even
  // first would give 2^-30).
  const model::__m512 order =
      model::_mm512_dpbf16_ps(lanes_of(1.0f), bf16_lanes(bf16_of(-1.0f), bf16_of(0x1p-30f)),
                              bf16_lanes(bf16_of(1.0f), bf16_of(1.0f)));
  for (float f : order.f) EXPECT_EQ(f, 0.0f);
  // Two roundings: 1 + 2^-24 (tie) to 1, twice; one rounding of the sum would give 1 + 2^-23.
  const model::__m512 steps =
      model::_mm512_dpbf16_ps(lanes_of(1.0f), bf16_lanes(bf16_of(0x1p-24f), bf16_of(0x1p-24f)),
                              bf16_lanes(bf16_of(1.0f), bf16_of(1.0f)));
  for (float f : steps.f) EXPECT_EQ(f, 1.0f);
  // Denormal inputs read as zero (bf16 0x0001 times 2^100); denormal results flushed (2^-70 *
  // 2^-70); products of normal bf16 are exact (3 * 5 + 7 * 11).
  const model::__m512 daz = model::_mm512_dpbf16_ps(
      lanes_of(0.0f), bf16_lanes(0x0001, 0x0001), bf16_lanes(bf16_of(0x1p100f), bf16_of(0x1p100f)));
  for (float f : daz.f) EXPECT_EQ(f, 0.0f);
  const model::__m512 ftz = model::_mm512_dpbf16_ps(
      lanes_of(0.0f), bf16_lanes(bf16_of(0x1p-70f), 0), bf16_lanes(bf16_of(0x1p-70f), 0));
  for (float f : ftz.f) EXPECT_EQ(f, 0.0f);
  const model::__m512 exact =
      model::_mm512_dpbf16_ps(lanes_of(0.5f), bf16_lanes(bf16_of(3.0f), bf16_of(7.0f)),
                              bf16_lanes(bf16_of(5.0f), bf16_of(11.0f)));
  for (float f : exact.f) EXPECT_EQ(f, 92.5f);
}

}  // namespace
}  // namespace qvl::ops::avx512_model_check
