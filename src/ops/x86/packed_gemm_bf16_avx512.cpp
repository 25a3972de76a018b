// AVX-512 BF16 kernel set of the blocked GEMM for bf16 weights (driver and layouts:
// packed_gemm.h/.cpp). vdpbf16ps does 16 lanes x 2 products per instruction, so one instruction
// covers what two fp32 FMAs cover, on half the bytes.
//
// Layouts, with the instruction's semantics (lane j of dst += a.bf16[2j] * b.bf16[2j] +
// a.bf16[2j + 1] * b.bf16[2j + 1], products exact, sums in fp32 with round-to-nearest-even,
// denormal inputs read as zero):
//   x panel  [k / 2][12] bf16 pairs: pair q of x row i = (x[i][2q], x[i][2q + 1]) at 32-bit word
//            q * 12 + i, broadcast to every lane.
//   strip    [depth / 2][32] bf16 pairs: pair q of weight row j at word q * 32 + j (the shared
//            packer transposes the 32-bit pairs of the packed tiles), so one zmm holds pair q of
//            16 weight rows (lane j = row j).
// So acc lane j += w[j][2q] x[i][2q] + w[j][2q+1] x[i][2q+1]: x row i against weight row j, as in
// the fp32 tile. Tile: 12 x rows x 32 weight rows (24 accumulators + 2 strip vectors + 1
// broadcast).
// The kernel code is in packed_gemm_bf16_avx512_tile.inc, also run on a scalar model of AVX-512 in
// the tests. Called only when the CPU has the AVX-512 level (see best_isa); no shared inline
// functions. GCC 12's AVX-512 headers self-initialise "undefined" vectors (__Y = __Y), which
// -Werror rejects once inlined here: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/packed_gemm.h"
#include "ops/x86/packed_gemm_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")

namespace qvl::ops::kernels {
namespace {

#include "ops/x86/packed_gemm_bf16_avx512_tile.inc"

}  // namespace

constinit const GemmKernels kGemmBf16Avx512{
    "bf16-avx512", 2, 2, kTileX, kStrip, pack_x_panel, pack_strips_bf16_pairs_avx2, tile};

}  // namespace qvl::ops::kernels

QVL_TARGET_ISA_END
