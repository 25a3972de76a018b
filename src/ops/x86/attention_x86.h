// Internal: the x86 attention kernels (ops/attention_kernels.h, ops/attention_decode.h).
#pragma once

#include <cstdint>

#include "ops/attention_decode.h"
#include "ops/attention_kernels.h"

namespace qvl::ops::attention_kernels {

// Computes out for queries [q_begin, q_end) of every query head of kv heads [kvh_begin,
// kvh_end). head_dim must be a multiple of 16. scratch: task_scratch_floats(rows, head_dim,
// kvh_end - kvh_begin) floats, rows = queries * group.
void task_avx512(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin,
                 int64_t q_end, float* scratch);
void task_avx2(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin, int64_t q_end,
               float* scratch);

// AttentionShape::bf16_products on AVX-512 BF16: k_panels and v_panels of kv heads [kvh_begin,
// kvh_end) as bf16 pairs, k_pairs [n_kv_heads, tiles, head_dim / 2, kKeyTile] and v_pairs
// [n_kv_heads, head_dim / kKeyTile, ceil(nk / 2), kKeyTile] (uint32: keys 2j, 2j + 1 of a column;
// a missing last key is 0); then the task on them (same scratch as task_avx512).
void bf16_pairs_avx512(const Problem& p, int64_t kvh_begin, int64_t kvh_end, uint32_t* k_pairs,
                       uint32_t* v_pairs);
void task_bf16_avx512(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin,
                      int64_t q_end, float* scratch);

void decode_span_avx2(const Problem& p, const DecodeTask& task);
void decode_span_avx512(const Problem& p, const DecodeTask& task);

}  // namespace qvl::ops::attention_kernels
