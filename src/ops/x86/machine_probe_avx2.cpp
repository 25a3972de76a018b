// AVX2 + FMA loops of the machine probe. Called only when the CPU has them; this file must not
// define or instantiate any inline function from a shared header (see packed_kernels.h).
#include <immintrin.h>

#include "ops/machine_probe_kernels.h"
#include "ops/x86/machine_probe_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c")

// An empty asm that "changes" v: the compiler can neither merge equal accumulators nor hoist
// loop-invariant products, and no instruction is emitted.
#define QVL_OPAQUE(v) asm volatile("" : "+x"(v))

namespace qvl::ops::probe_kernels {
namespace {

float min_lane(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float m = lanes[0];
  for (float x : lanes) m = x < m ? x : m;
  return m;
}

int32_t min_lane(__m256i v) {
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  int32_t m = lanes[0];
  for (int32_t x : lanes) m = x < m ? x : m;
  return m;
}

}  // namespace

float fma_loop_avx2(int64_t iters, float a, float b) {
  constexpr int kAcc = 12;  // 2 FMA pipes x latency 4-5, with room
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  __m256 acc[kAcc];
  for (auto& x : acc) {
    x = _mm256_setzero_ps();
    QVL_OPAQUE(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (auto& x : acc) x = _mm256_fmadd_ps(x, va, vb);
  }
  __m256 m = acc[0];
  for (const auto& x : acc) m = _mm256_min_ps(m, x);
  return min_lane(m);
}

int32_t int8_dot_loop_avx2(int64_t iters, uint8_t u, int8_t s) {
  constexpr int kAcc = 6;  // 6 operands + 6 accumulators + 2 constants fit the 16 registers
  // Each accumulator gets its own (opaque) copy of the unsigned operand, so no product is shared
  // or hoisted; only the vpaddd chains are loop-carried.
  const __m256i vs = _mm256_set1_epi8(s), ones = _mm256_set1_epi16(1);
  __m256i vu[kAcc], acc[kAcc];
  // Unrolled, so that the arrays live in registers: as a loop it left acc on the stack, every
  // vpaddd waited on a store-to-load forward, and the probe read half of Zen 3's int8 rate.
#pragma GCC unroll 16
  for (int k = 0; k < kAcc; ++k) {
    vu[k] = _mm256_set1_epi8(static_cast<char>(u));
    acc[k] = _mm256_setzero_si256();
    QVL_OPAQUE(acc[k]);
  }
  for (int64_t i = 0; i < iters; ++i) {
    asm volatile("" : "+x"(vu[0]), "+x"(vu[1]), "+x"(vu[2]), "+x"(vu[3]), "+x"(vu[4]), "+x"(vu[5]));
#pragma GCC unroll 16
    for (int k = 0; k < kAcc; ++k) {
      const __m256i pairs = _mm256_maddubs_epi16(vu[k], vs);
      acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(pairs, ones));
    }
  }
  __m256i m = acc[0];
#pragma GCC unroll 16
  for (const auto& x : acc) m = _mm256_min_epi32(m, x);
  return min_lane(m);
}

uint64_t read_sum_avx2(const uint8_t* p, size_t bytes) {
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 128 <= bytes; i += 128) {
    s0 = _mm256_add_epi64(s0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    s1 = _mm256_add_epi64(s1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    s2 = _mm256_add_epi64(s2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    s3 = _mm256_add_epi64(s3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  for (; i < bytes; i += 64) {
    s0 = _mm256_add_epi64(s0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    s1 = _mm256_add_epi64(s1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

}  // namespace qvl::ops::probe_kernels

QVL_TARGET_ISA_END
