// AVX-512 flash-attention task (see attention_kernels.h). Called only when the CPU has AVX-512;
// this file must not define or instantiate any inline function from a shared header (no std::
// templates below the target pragma), or the linker could pick an AVX-512 copy for everyone.
// GCC 12's AVX-512 headers self-initialise "undefined" vectors, which -Werror rejects.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "ops/attention_kernels.h"
#include "ops/x86/attention_x86.h"
#include "ops/x86/target_isa.h"

QVL_TARGET_ISA_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma")

#include "ops/x86/elementwise_avx512_math.h"

namespace qvl::ops::attention_kernels {
namespace {

#include "ops/x86/attention_avx512_task.inc"
// (after the fp32 task: shares its softmax)
#include "ops/x86/attention_bf16_avx512_task.inc"

}  // namespace

void task_avx512(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin,
                 int64_t q_end, float* scratch) {
  flash_task<Avx512FlashKernels>(p, kvh_begin, kvh_end, q_begin, q_end, scratch);
}

void bf16_pairs_avx512(const Problem& p, int64_t kvh_begin, int64_t kvh_end, uint32_t* k_pairs,
                       uint32_t* v_pairs) {
  bf16_pairs_from_panels(p, kvh_begin, kvh_end, k_pairs, v_pairs);
}

void task_bf16_avx512(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin,
                      int64_t q_end, float* scratch) {
  flash_task<Avx512Bf16FlashKernels>(p, kvh_begin, kvh_end, q_begin, q_end, scratch);
}

}  // namespace qvl::ops::attention_kernels

QVL_TARGET_ISA_END
