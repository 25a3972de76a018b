// Vector math for AVX-512 kernels. Include only after `#pragma GCC target("avx512f,...")` in a
// kernel file: the functions are static (one private copy per file), so no AVX-512 code can leak
// into callers on other CPUs.
#pragma once

#include <immintrin.h>

#include "ops/exp2_polynomial.h"

// The functions themselves (a fragment the model tests include too).
#include "ops/x86/elementwise_avx512_math.inc"
