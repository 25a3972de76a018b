// AVX-VNNI micro-kernels of the int8 GEMM (256-bit vpdpbusd; Alder Lake and later, Zen 5): the
// layout and blocking of the AVX2 kernels (x rows [1, 6] x 16 weight rows), with vpdpbusd summing
// 4 unsigned x signed byte products straight into int32 (see int8_gemm_vnni256_tile.h).
// Called only when the CPU has AVX-VNNI; no shared inline functions (see packed_kernels.h).
#include <immintrin.h>

#include <cstring>

#include "ops/int8_gemm_kernels.h"
#include "ops/x86/int8_gemm_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx2,fma,f16c,avxvnni")

#include "ops/x86/int8_gemm_vnni256_tile.h"

namespace qvl::ops::kernels {
namespace {

struct Vpdpbusd {
  static __m256i apply(__m256i acc, __m256i a, __m256i b) {
    return _mm256_dpbusd_avx_epi32(acc, a, b);
  }
};

}  // namespace

void int8_tile_q8_avxvnni(const Int8Tile& t) {
  vnni256_tile_rows<Vpdpbusd, Vnni256Weights::kQ8>(t);
}
void int8_tile_q4_avxvnni(const Int8Tile& t) {
  vnni256_tile_rows<Vpdpbusd, Vnni256Weights::kQ4>(t);
}
void int8_tile_q8s_avxvnni(const Int8Tile& t) {
  vnni256_tile_rows<Vpdpbusd, Vnni256Weights::kStoredQ8>(t);
}
void int8_tile_q4s_avxvnni(const Int8Tile& t) {
  vnni256_tile_rows<Vpdpbusd, Vnni256Weights::kStoredQ4>(t);
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
