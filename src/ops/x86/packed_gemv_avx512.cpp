// Whole-row GEMV and small-batch kernels, AVX-512 (F, BW, VL, BF16, VNNI); see GroupRun in
// packed_kernels.h. Called only when the CPU has them (see best_isa); this file must not define or
// instantiate any inline function from a shared header.
//
// Templates over G groups x X rows of x whose arithmetic for one (x row, group) pair is the same
// for every G and X (batch invariance); the GEMV shares each x block across G groups. They live in
// fragments also run on a scalar model of AVX-512 in the tests: bf16 in
// packed_gemv_avx512_bf16.inc, q8/q4 in packed_gemv_avx512_quant.inc (they reproduce the int8
// GEMM's rows bit for bit). GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y =
// __Y), which -Werror rejects once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "ops/packed_gemv_shapes.h"
#include "ops/packed_kernels.h"
#include "ops/x86/packed_kernels_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

#include "ops/x86/packed_gemv_avx512_bf16.inc"
#include "ops/x86/packed_gemv_avx512_quant.inc"

}  // namespace

void bf16_run_avx512(const GroupRun& w, const void* x, size_t x_stride, int nx, float* out) {
  bf16_run(w, x, x_stride, nx, out);
}
void q8_run_avx512(const GroupRun& w, const QuantX& x, int nx, float* out) {
  quant_run<Q8Format>(w, x, nx, out);
}
void q4_run_avx512(const GroupRun& w, const QuantX& x, int nx, float* out) {
  quant_run<Q4Format>(w, x, nx, out);
}

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
