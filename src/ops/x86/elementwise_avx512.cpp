// AVX-512 activations and norm rows (see elementwise_kernels.h). Called only when the CPU has
// AVX-512; no inline function from a shared header may be instantiated below the target pragma.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/elementwise_kernels.h"
#include "ops/x86/elementwise_x86.h"
#include "ops/x86/target_isa.h"

// Same rounding as the scalar references: no fusing of their separate multiplies and adds.
QVL_NO_FP_CONTRACT

QVL_TARGET_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")

#include "ops/x86/elementwise_avx512_math.h"

namespace qvl::ops::elementwise_kernels {
#include "ops/x86/elementwise_avx512.inc"

}  // namespace qvl::ops::elementwise_kernels

QVL_TARGET_ISA_END
