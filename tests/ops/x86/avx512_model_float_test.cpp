// The floating-point model of AVX-512 intrinsics (avx512_model_float.inc) against real
// instructions: each lane-local operation must act on both 256-bit halves as its AVX2 / FMA
// counterpart does, bit for bit, on inputs with NaN, infinities, signed zeros and subnormals; the
// horizontal reductions as the same tree of AVX2 operations that <avx512fintrin.h> builds; and
// the operations without an AVX2 twin (scalef, masked moves) on the guide's special cases.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "base/half.h"
#include "ops/x86/cpuid_features.h"
#include "ops/x86/target_isa.h"

namespace qvl::ops::avx512_model_float_check {
namespace {

enum class Op {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,
  kFmadd,
  kFnmadd,
  kRoundNearest,
  kRoundFloor,
  kRoundCeil,
  kRoundTrunc,
  kRoundMxcsr
};
constexpr Op kOps[] = {Op::kAdd,          Op::kSub,        Op::kMul,       Op::kDiv,
                       Op::kMax,          Op::kMin,        Op::kFmadd,     Op::kFnmadd,
                       Op::kRoundNearest, Op::kRoundFloor, Op::kRoundCeil, Op::kRoundTrunc,
                       Op::kRoundMxcsr};

// The real operations on 8 lanes, through memory. Only plain functions under the target pragma,
// so no template or library function is instantiated for AVX2 here.
QVL_TARGET_ISA_PUSH("avx2,fma,f16c")

void real_op(Op op, const float* a, const float* b, const float* c, float* out) {
  const __m256 x = _mm256_loadu_ps(a), y = _mm256_loadu_ps(b), z = _mm256_loadu_ps(c);
  __m256 r = x;
  switch (op) {
    case Op::kAdd:
      r = _mm256_add_ps(x, y);
      break;
    case Op::kSub:
      r = _mm256_sub_ps(x, y);
      break;
    case Op::kMul:
      r = _mm256_mul_ps(x, y);
      break;
    case Op::kDiv:
      r = _mm256_div_ps(x, y);
      break;
    case Op::kMax:
      r = _mm256_max_ps(x, y);
      break;
    case Op::kMin:
      r = _mm256_min_ps(x, y);
      break;
    case Op::kFmadd:
      r = _mm256_fmadd_ps(x, y, z);
      break;
    case Op::kFnmadd:
      r = _mm256_fnmadd_ps(x, y, z);
      break;
    case Op::kRoundNearest:
      r = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      break;
    case Op::kRoundFloor:
      r = _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
      break;
    case Op::kRoundCeil:
      r = _mm256_round_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
      break;
    case Op::kRoundTrunc:
      r = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      break;
    case Op::kRoundMxcsr:
      r = _mm256_round_ps(x, _MM_FROUND_CUR_DIRECTION);
      break;
  }
  _mm256_storeu_ps(out, r);
}

// The comparison with predicate imm as a mask of 8 bits.
#define QVL_CMP_CASE(i) \
  case i:               \
    return _mm256_movemask_ps(_mm256_cmp_ps(x, y, i));
int real_cmp(int imm, const float* a, const float* b) {
  const __m256 x = _mm256_loadu_ps(a), y = _mm256_loadu_ps(b);
  switch (imm) {
    QVL_CMP_CASE(0)
    QVL_CMP_CASE(1)
    QVL_CMP_CASE(2)
    QVL_CMP_CASE(3)
    QVL_CMP_CASE(4)
    QVL_CMP_CASE(5)
    QVL_CMP_CASE(6) QVL_CMP_CASE(7) QVL_CMP_CASE(8) QVL_CMP_CASE(9) QVL_CMP_CASE(10)
        QVL_CMP_CASE(11) QVL_CMP_CASE(12) QVL_CMP_CASE(13) QVL_CMP_CASE(14) QVL_CMP_CASE(15)
            QVL_CMP_CASE(16) QVL_CMP_CASE(17) QVL_CMP_CASE(18) QVL_CMP_CASE(19) QVL_CMP_CASE(20)
                QVL_CMP_CASE(21) QVL_CMP_CASE(22) QVL_CMP_CASE(23) QVL_CMP_CASE(24) QVL_CMP_CASE(25)
                    QVL_CMP_CASE(26) QVL_CMP_CASE(27) QVL_CMP_CASE(28) QVL_CMP_CASE(29)
                        QVL_CMP_CASE(30) QVL_CMP_CASE(31)
  }
  return -1;
}
#undef QVL_CMP_CASE

// hadd, permute2f128 (0x20, 0x31, 0x03, 0x18) of two 8-lane vectors.
void real_shuffles(const float* a, const float* b, float out[5][8]) {
  const __m256 x = _mm256_loadu_ps(a), y = _mm256_loadu_ps(b);
  _mm256_storeu_ps(out[0], _mm256_hadd_ps(x, y));
  _mm256_storeu_ps(out[1], _mm256_permute2f128_ps(x, y, 0x20));
  _mm256_storeu_ps(out[2], _mm256_permute2f128_ps(x, y, 0x31));
  _mm256_storeu_ps(out[3], _mm256_permute2f128_ps(x, y, 0x03));
  _mm256_storeu_ps(out[4], _mm256_permute2f128_ps(x, y, 0x18));
}

// The tree of <avx512fintrin.h>'s _mm512_reduce_add_ps / _max_ps on 16 lanes, in AVX2 operations:
// upper 8 op lower 8, upper 4 op lower 4, (0, 2) and (1, 3), then those two.
void real_reductions(const float* a, float* sum, float* max) {
  const __m256 lo = _mm256_loadu_ps(a), hi = _mm256_loadu_ps(a + 8);
  const __m256 s8 = _mm256_add_ps(hi, lo), m8 = _mm256_max_ps(hi, lo);
  const __m128 s4 = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
  const __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m8, 1), _mm256_castps256_ps128(m8));
  const __m128 s2 = _mm_add_ps(s4, _mm_shuffle_ps(s4, s4, 0x4e));
  const __m128 m2 = _mm_max_ps(m4, _mm_shuffle_ps(m4, m4, 0x4e));
  *sum = _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  *max = _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
}

// 4 doubles from 4 floats; a - b, a + b and fma(a, b, c) on 4 doubles; 8 bytes sign-extended.
void real_doubles(const float* f, const double* a, const double* b, const double* c,
                  double out[4][4]) {
  _mm256_storeu_pd(out[0], _mm256_cvtps_pd(_mm_loadu_ps(f)));
  const __m256d x = _mm256_loadu_pd(a), y = _mm256_loadu_pd(b), z = _mm256_loadu_pd(c);
  _mm256_storeu_pd(out[1], _mm256_sub_pd(x, y));
  _mm256_storeu_pd(out[2], _mm256_add_pd(x, y));
  _mm256_storeu_pd(out[3], _mm256_fmadd_pd(x, y, z));
}
void real_widen_bytes(const void* bytes, int32_t* out) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(bytes))));
}
// p * 2^n built in the exponent bits, as the AVX2 exponentials do (n a whole number in
// [-126, 127]).
void real_scale_by_exponent(const float* p, const float* n, float* out) {
  const __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_loadu_ps(n)), _mm256_set1_epi32(127)), 23);
  _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_loadu_ps(p), _mm256_castsi256_ps(bits)));
}

QVL_TARGET_ISA_POP

}  // namespace

// Some intrinsics are macros when not optimising; the model defines functions of those names
// (after the real operations above, which may use the macros).
#undef _mm256_extractf128_ps
#undef _mm256_permute2f128_ps
#undef _mm512_cmp_ps_mask
#undef _mm512_extractf32x8_ps
#undef _mm512_roundscale_ps
#undef _mm512_shuffle_epi32
#undef _mm512_shuffle_i32x4
#undef _mm512_srli_epi16
#undef _mm_prefetch

namespace model {
#include "avx512_model.inc"
#include "avx512_model_float.inc"
}  // namespace model

namespace {

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         qvl::ops::arch::cpuid_has_f16c();
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}
bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Normal values of mixed scale, with special values sprinkled in.
float special_or_random(std::mt19937& rng) {
  static const float kSpecial[] = {0.0f, -0.0f, INFINITY, -INFINITY,  NAN,   1e-40f, -3e-39f,
                                   1.5f, -2.5f, 0.5f,     8388609.0f, 1e30f, -1e-30f};
  if (rng() % 4 == 0) return kSpecial[rng() % std::size(kSpecial)];
  std::normal_distribution<float> dist(0.0f, 1.0f);
  return dist(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
}

model::__m512 model_op(Op op, model::__m512 a, model::__m512 b, model::__m512 c) {
  switch (op) {
    case Op::kAdd:
      return model::_mm512_add_ps(a, b);
    case Op::kSub:
      return model::_mm512_sub_ps(a, b);
    case Op::kMul:
      return model::_mm512_mul_ps(a, b);
    case Op::kDiv:
      return model::_mm512_div_ps(a, b);
    case Op::kMax:
      return model::_mm512_max_ps(a, b);
    case Op::kMin:
      return model::_mm512_min_ps(a, b);
    case Op::kFmadd:
      return model::_mm512_fmadd_ps(a, b, c);
    case Op::kFnmadd:
      return model::_mm512_fnmadd_ps(a, b, c);
    case Op::kRoundNearest:
      return model::_mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    case Op::kRoundFloor:
      return model::_mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    case Op::kRoundCeil:
      return model::_mm512_roundscale_ps(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    case Op::kRoundTrunc:
      return model::_mm512_roundscale_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    case Op::kRoundMxcsr:
      return model::_mm512_roundscale_ps(a, _MM_FROUND_CUR_DIRECTION);
  }
  return a;
}

class Avx512ModelFloat : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU lacks AVX2+FMA+F16C: nothing to compare with";
  }
  std::mt19937 rng{17};
  model::__m512 random_vector() {
    model::__m512 v;
    for (float& f : v.f) f = special_or_random(rng);
    return v;
  }
};

TEST_F(Avx512ModelFloat, LaneOpsActAsTheirAvx2Counterparts) {
  for (Op op : kOps) {
    for (int t = 0; t < 300; ++t) {
      const model::__m512 a = random_vector(), b = random_vector(), c = random_vector();
      const model::__m512 got = model_op(op, a, b, c);
      for (int h = 0; h < 2; ++h) {
        float want[8];
        real_op(op, a.f + 8 * h, b.f + 8 * h, c.f + 8 * h, want);
        for (int l = 0; l < 8; ++l) {
          const float m = got.f[8 * h + l];
          // NaN results by class: the payload rules are not the kernels' concern.
          ASSERT_TRUE(same_bits(m, want[l]) || (std::isnan(m) && std::isnan(want[l])))
              << "op " << static_cast<int>(op) << " lane " << 8 * h + l << ": " << a.f[8 * h + l]
              << ", " << b.f[8 * h + l] << ", " << c.f[8 * h + l] << " -> " << m << " vs "
              << want[l];
        }
      }
    }
  }
}

TEST_F(Avx512ModelFloat, ComparisonsGiveTheAvx2MaskForEveryPredicate) {
  for (int imm = 0; imm < 32; ++imm) {
    for (int t = 0; t < 100; ++t) {
      model::__m512 a = random_vector(), b = random_vector();
      for (int l = 0; l < 16; l += 3) b.f[l] = a.f[l];  // equal pairs too
      const int got = model::_mm512_cmp_ps_mask(a, b, imm);
      const int want = real_cmp(imm, a.f, b.f) | real_cmp(imm, a.f + 8, b.f + 8) << 8;
      ASSERT_EQ(got, want) << "predicate " << imm;
    }
  }
}

TEST_F(Avx512ModelFloat, ShufflesAndReductionsFollowTheRealOperations) {
  for (int t = 0; t < 200; ++t) {
    const model::__m512 a = random_vector(), b = random_vector();
    const model::__m256 x = model::_mm512_castps512_ps256(a),
                        y = model::_mm512_extractf32x8_ps(b, 1);
    const model::__m256 got[5] = {
        model::_mm256_hadd_ps(x, y), model::_mm256_permute2f128_ps(x, y, 0x20),
        model::_mm256_permute2f128_ps(x, y, 0x31), model::_mm256_permute2f128_ps(x, y, 0x03),
        model::_mm256_permute2f128_ps(x, y, 0x18)};
    float want[5][8];
    real_shuffles(a.f, b.f + 8, want);
    for (int op = 0; op < 5; ++op) {
      for (int l = 0; l < 8; ++l) {
        EXPECT_TRUE(same_bits(got[op].f[l], want[op][l]) ||
                    (std::isnan(got[op].f[l]) && std::isnan(want[op][l])))
            << "shuffle " << op << " lane " << l;
      }
    }
    // Reductions on finite inputs of mixed scale: the tree shows in the rounding.
    model::__m512 f;
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& v : f.f) v = dist(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 30));
    float sum, max;
    real_reductions(f.f, &sum, &max);
    EXPECT_TRUE(same_bits(model::_mm512_reduce_add_ps(f), sum));
    EXPECT_TRUE(same_bits(model::_mm512_reduce_max_ps(f), max));
  }
  // A sum whose sequential order would give another answer: 2^24 + 1 + 1 + ... (15 ones).
  model::__m512 ones = model::_mm512_set1_ps(1.0f);
  ones.f[0] = 16777216.0f;
  float sum, max;
  real_reductions(ones.f, &sum, &max);
  EXPECT_EQ(model::_mm512_reduce_add_ps(ones), sum);
  EXPECT_NE(sum, 16777216.0f);  // sequentially every 1 would be lost
}

TEST_F(Avx512ModelFloat, DoublesAndByteWideningActAsAvx2) {
  std::normal_distribution<double> dist(0.0, 1e3);
  for (int t = 0; t < 200; ++t) {
    const model::__m512 f = random_vector();
    model::__m512d a, b, c;
    for (int l = 0; l < 8; ++l) a.d[l] = dist(rng), b.d[l] = dist(rng), c.d[l] = dist(rng);
    const model::__m512d got[4] = {model::_mm512_cvtps_pd(model::_mm512_castps512_ps256(f)),
                                   model::_mm512_sub_pd(a, b), model::_mm512_add_pd(a, b),
                                   model::_mm512_mask3_fmadd_pd(a, b, c, 0xff)};
    for (int h = 0; h < 2; ++h) {
      double want[4][4];
      real_doubles(f.f + 4 * h, a.d + 4 * h, b.d + 4 * h, c.d + 4 * h, want);
      for (int op = 0; op < 4; ++op) {
        for (int l = 0; l < 4; ++l) {
          const double m = got[op].d[4 * h + l];
          EXPECT_TRUE(same_bits(m, want[op][l]) || (std::isnan(m) && std::isnan(want[op][l])))
              << "double op " << op;
        }
      }
    }
    // Masked lanes keep src / c; the sum of 8 doubles by the header's tree.
    const model::__m512d masked_add = model::_mm512_mask_add_pd(c, 0x5a, a, b);
    const model::__m512d masked_fma = model::_mm512_mask3_fmadd_pd(a, b, c, 0x5a);
    for (int l = 0; l < 8; ++l) {
      const bool on = (0x5a >> l) & 1;
      EXPECT_TRUE(same_bits(masked_add.d[l], on ? a.d[l] + b.d[l] : c.d[l]));
      EXPECT_TRUE(same_bits(masked_fma.d[l], on ? std::fma(a.d[l], b.d[l], c.d[l]) : c.d[l]));
    }
    const double t3[4] = {a.d[4] + a.d[0], a.d[5] + a.d[1], a.d[6] + a.d[2], a.d[7] + a.d[3]};
    EXPECT_TRUE(same_bits(model::_mm512_reduce_add_pd(a), (t3[2] + t3[0]) + (t3[3] + t3[1])));
    model::__m128i bytes;
    for (uint8_t& x : bytes.b) x = static_cast<uint8_t>(rng());
    const model::__m512i wide = model::_mm512_cvtepi8_epi32(bytes);
    for (int h = 0; h < 2; ++h) {
      int32_t want[8];
      real_widen_bytes(bytes.b + 8 * h, want);
      for (int l = 0; l < 8; ++l) EXPECT_EQ(wide.get<int32_t>(8 * h + l), want[l]);
    }
  }
}

TEST_F(Avx512ModelFloat, ScalefMatchesExponentBitsAndTheGuidesSpecialCases) {
  // In the normal range: as multiplying by 2^n built in the exponent bits (the AVX2 kernels).
  std::uniform_real_distribution<float> mantissa(0.5f, 2.0f);
  for (int t = 0; t < 200; ++t) {
    model::__m512 p, n;
    for (int l = 0; l < 16; ++l) {
      p.f[l] = mantissa(rng);
      n.f[l] = static_cast<float>(static_cast<int>(rng() % 250) - 124);
    }
    const model::__m512 got = model::_mm512_scalef_ps(p, n);
    for (int h = 0; h < 2; ++h) {
      float want[8];
      real_scale_by_exponent(p.f + 8 * h, n.f + 8 * h, want);
      for (int l = 0; l < 8; ++l) ASSERT_TRUE(same_bits(got.f[8 * h + l], want[l]));
    }
  }
  // floor(b), gradual underflow rounded to nearest even, overflow, and the table's specials.
  const float inf = INFINITY, tiny = std::numeric_limits<float>::denorm_min();
  const struct {
    float a, b, want;
  } cases[] = {{1.0f, 2.7f, 4.0f},     {1.0f, -2.3f, 0.125f}, {1.5f, -149.0f, 2 * tiny},
               {1.25f, -149.0f, tiny}, {3.0f, 127.0f, inf},   {-3.0f, 127.5f, -inf},
               {0.75f, -150.0f, 0.0f}, {-0.0f, 5.0f, -0.0f},  {2.0f, inf, inf},
               {-2.0f, -inf, -0.0f},   {-inf, 3.0f, -inf},    {0.0f, -inf, 0.0f},
               {inf, inf, inf},        {1.0f, -1e10f, 0.0f},  {1.0f, 1e10f, inf}};
  for (const auto& c : cases) {
    const float got =
        model::_mm512_scalef_ps(model::_mm512_set1_ps(c.a), model::_mm512_set1_ps(c.b)).f[5];
    EXPECT_TRUE(same_bits(got, c.want)) << c.a << " * 2^" << c.b << " = " << got;
  }
  for (const auto& nan_case :
       {std::pair{0.0f, inf}, std::pair{inf, -inf}, std::pair{NAN, 1.0f}, std::pair{1.0f, NAN}}) {
    EXPECT_TRUE(std::isnan(model::_mm512_scalef_ps(model::_mm512_set1_ps(nan_case.first),
                                                   model::_mm512_set1_ps(nan_case.second))
                               .f[0]));
  }
}

TEST_F(Avx512ModelFloat, MaskedMovesLoadsAndStoresTouchOnlyTheirLanes) {
  const model::__m512 a = random_vector(), src = model::_mm512_set1_ps(-7.0f);
  const model::__mmask16 k = 0x8421;
  const model::__m512 mov = model::_mm512_mask_mov_ps(src, k, a);
  const model::__m512 movz = model::_mm512_maskz_mov_ps(k, a);
  float memory[16];
  for (int l = 0; l < 16; ++l) memory[l] = static_cast<float>(l);
  const model::__m512 load = model::_mm512_mask_loadu_ps(src, k, memory);
  const model::__m512 loadz = model::_mm512_maskz_loadu_ps(k, memory);
  for (int l = 0; l < 16; ++l) {
    const bool on = (k >> l) & 1;
    EXPECT_TRUE(same_bits(mov.f[l], on ? a.f[l] : -7.0f));
    EXPECT_TRUE(same_bits(movz.f[l], on ? a.f[l] : 0.0f));
    EXPECT_EQ(load.f[l], on ? static_cast<float>(l) : -7.0f);
    EXPECT_TRUE(same_bits(loadz.f[l], on ? static_cast<float>(l) : 0.0f));
  }
  // A masked load at the end of an array reads no lane past it (model: no access at all).
  const float last[1] = {42.0f};
  EXPECT_EQ(model::_mm512_maskz_loadu_ps(1, last).f[0], 42.0f);
}

}  // namespace
}  // namespace qvl::ops::avx512_model_float_check
