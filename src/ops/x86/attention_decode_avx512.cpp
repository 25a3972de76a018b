// AVX-512 decode span kernel (see attention_decode.h): the AVX2 kernel's structure at 16 lanes.
// Called only when the CPU has AVX-512; this file must not define or instantiate any inline
// function from a shared header (no std:: templates below the target pragma), or the linker could
// pick an AVX-512 copy for everyone.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors, which -Werror rejects.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/attention_decode.h"
#include "ops/kv_q8.h"
#include "ops/x86/attention_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

#include "ops/x86/elementwise_avx512_math.h"

namespace qvl::ops::attention_kernels {
namespace {

#include "ops/x86/attention_decode_avx512.inc"
// The shared span driver, on the helpers above.
#include "ops/attention_decode_span.inc"

}  // namespace

void decode_span_avx512(const Problem& p, const DecodeTask& task) {
  run_span(p, task);
}

}  // namespace qvl::ops::attention_kernels

QVL_TARGET_ISA_END
