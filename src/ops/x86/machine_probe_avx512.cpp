// AVX-512 loops of the machine probe (F, BW, VL, BF16, VNNI). Called only when the CPU has them;
// this file must not define or instantiate any inline function from a shared header.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors, which -Werror rejects once
// inlined here: a false positive (see packed_kernels_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/machine_probe_kernels.h"
#include "ops/x86/machine_probe_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")

// An empty asm that "changes" v, so equal accumulators are not merged (no instruction emitted).
#define QVL_OPAQUE(v) asm volatile("" : "+v"(v))

namespace qvl::ops::probe_kernels {
namespace {

constexpr int kAcc = 16;  // 2 FMA ports x latency 4, twice over; half the 32 registers

float min_lane(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float m = lanes[0];
  for (float x : lanes) m = x < m ? x : m;
  return m;
}

int32_t min_lane(__m512i v) {
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, v);
  int32_t m = lanes[0];
  for (int32_t x : lanes) m = x < m ? x : m;
  return m;
}

uint16_t bf16_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace

float fma_loop_avx512(int64_t iters, float a, float b) {
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  __m512 acc[kAcc];
  for (auto& x : acc) {
    x = _mm512_setzero_ps();
    QVL_OPAQUE(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (auto& x : acc) x = _mm512_fmadd_ps(x, va, vb);
  }
  __m512 m = acc[0];
  for (const auto& x : acc) m = _mm512_min_ps(m, x);
  return min_lane(m);
}

float bf16_dot_loop_avx512(int64_t iters, float a, float b) {
  const __m512bh va = (__m512bh)_mm512_set1_epi16(static_cast<short>(bf16_bits(a)));
  const __m512bh vb = (__m512bh)_mm512_set1_epi16(static_cast<short>(bf16_bits(b)));
  __m512 acc[kAcc];
  for (auto& x : acc) {
    x = _mm512_setzero_ps();
    QVL_OPAQUE(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (auto& x : acc) x = _mm512_dpbf16_ps(x, va, vb);
  }
  __m512 m = acc[0];
  for (const auto& x : acc) m = _mm512_min_ps(m, x);
  return min_lane(m);
}

int32_t int8_dot_loop_avx512(int64_t iters, uint8_t u, int8_t s) {
  const __m512i vu = _mm512_set1_epi8(static_cast<char>(u)), vs = _mm512_set1_epi8(s);
  __m512i acc[kAcc];
  for (auto& x : acc) {
    x = _mm512_setzero_si512();
    QVL_OPAQUE(x);
  }
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (auto& x : acc) x = _mm512_dpbusd_epi32(x, vu, vs);
  }
  __m512i m = acc[0];
  for (const auto& x : acc) m = _mm512_min_epi32(m, x);
  return min_lane(m);
}

uint64_t read_sum_avx512(const uint8_t* p, size_t bytes) {
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 256 <= bytes; i += 256) {
    s0 = _mm512_add_epi64(s0, _mm512_load_si512(p + i));
    s1 = _mm512_add_epi64(s1, _mm512_load_si512(p + i + 64));
    s2 = _mm512_add_epi64(s2, _mm512_load_si512(p + i + 128));
    s3 = _mm512_add_epi64(s3, _mm512_load_si512(p + i + 192));
  }
  for (; i < bytes; i += 64) s0 = _mm512_add_epi64(s0, _mm512_load_si512(p + i));
  const __m512i s = _mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3));
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, s);
  uint64_t total = 0;
  for (uint64_t x : lanes) total += x;
  return total;
}

}  // namespace qvl::ops::probe_kernels

QVL_TARGET_ISA_END
