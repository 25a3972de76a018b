// AVX-512 VNNI micro-kernels of the int8 GEMM: x rows [1, 6] x 32 weight rows (two vectors of 16
// rows, 4 columns per 32-bit lane), 512-bit vpdpbusd into int32 with the operand choice of the
// AVX-VNNI kernels (q8: x + 128 times w, less 128 * sum(w); q4: nibble q + 8 times x, less
// 8 * sum(x); see int8_gemm_avxvnni.cpp). The fp32 outputs stay in registers for the whole chunk
// (12 int32 + 12 fp32 accumulators of the 32 registers). The tile is in int8_gemm_avx512_tile.inc,
// also run on a scalar model of AVX-512 in the tests.
// Called only when the CPU has the IsaLevel::kAvx512 set; no shared inline functions.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which -Werror rejects
// once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "ops/int8_gemm_kernels.h"
#include "ops/packed_matrix.h"
#include "ops/x86/int8_gemm_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

#include "ops/x86/int8_gemm_avx512_tile.inc"

}  // namespace

void int8_tile_q8_avx512(const Int8Tile& t) {
  tile_rows<Weights::kQ8>(t);
}
void int8_tile_q4_avx512(const Int8Tile& t) {
  tile_rows<Weights::kQ4>(t);
}
void int8_tile_q8s_avx512(const Int8Tile& t) {
  tile_rows<Weights::kStoredQ8>(t);
}
void int8_tile_q4s_avx512(const Int8Tile& t) {
  tile_rows<Weights::kStoredQ4>(t);
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
