// AVX-512 fp32 kernel set of the blocked GEMM (driver and layouts: packed_gemm.h/.cpp): a 12 x 32
// register tile, 12 x rows broadcast against a strip of 32 weight rows held in two zmm: 24
// accumulators + 2 weight vectors + 1 broadcast of the 32 zmm registers, 24 FMAs per 14 loads.
// Weight strips and x panels are packed by the shared fp32 packers.
// The kernel code is in packed_gemm_avx512_tile.inc, also run on a scalar model of AVX-512 in the
// tests. Called only when the CPU has the AVX-512 level (see best_isa); no shared inline functions.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which -Werror rejects
// once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/packed_gemm.h"
#include "ops/x86/packed_gemm_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

#include "ops/x86/packed_gemm_avx512_tile.inc"

}  // namespace

constinit const GemmKernels kGemmF32Avx512{
    "f32-avx512", 4, 4, kTileX, kStrip, pack_x_panel_f32, pack_strips_f32_avx2, tile};

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
