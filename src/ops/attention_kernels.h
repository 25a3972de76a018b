// Internal pieces of ops::attention: the scalar oracle and the per-ISA flash-attention kernels for
// many rows per key (prefill, vision); decode-like calls go to ops/attention_decode.h.
//
// The flash kernels work on one "task": one kv head and a block of queries. Its rows are the
// (query, head-in-group) pairs, so the query heads of a GQA group share every K/V load. Keys are
// visited in blocks with an online softmax (running max and sum per row), never an nq x nk
// matrix. K is pre-transposed into panels of kKeyTile keys: panel[kvh][tile][c][kKeyTile], so
// QK^T is a broadcast-FMA over head_dim into kKeyTile scores at once (zero-padded keys).
#pragma once

#include <cstdint>

#include "ops/attention.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::attention_kernels {

inline constexpr int64_t kKeyTile = 16;
// Keys per online-softmax step of the flash tasks (a multiple of kKeyTile); blocks start at
// multiples of it from key 0 in every task, whatever its queries.
inline constexpr int64_t kKeyBlock = 128;

// The scalar per-(query, head) implementation; the oracle for tests.
void attention_reference(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
                         const AttentionShape& shape, int64_t causal_offset, float* out);

// Whether the kernels of `isa` passed a one-time check against the reference on this CPU (computed
// on first use; attention() falls back to a lower level, with an error logged, if not). Only
// call for levels the CPU runs.
bool kernels_verified(IsaLevel isa);

struct Problem {
  const float* q = nullptr;  // [nq, n_heads, head_dim]
  // Keys and values as stored (fp32, half or 8-bit), read row by row through their pages by the
  // decode kernels; the flash tasks read k_panels and v_panels instead.
  PagedKV kv;
  // [n_kv_heads, ceil(nk / kKeyTile), head_dim, kKeyTile] (flash tasks only).
  const float* k_panels = nullptr;
  // v as [n_kv_heads, head_dim / kKeyTile, nk, kKeyTile] (flash tasks only): panels of 16 columns,
  // keys consecutive, so P V reads each panel as one contiguous stream. (Rows of v for one head
  // are a page or more apart as stored, and a block of them would fight over a few cache sets.)
  const float* v_panels = nullptr;
  // The panels above as bf16 pairs (task_bf16_avx512 only; see bf16_pairs_avx512).
  const uint32_t* k_pairs = nullptr;
  const uint32_t* v_pairs = nullptr;
  float* out = nullptr;  // [nq, n_heads, head_dim]
  int64_t nq = 0;
  int64_t nk = 0;
  AttentionShape shape;
  int64_t causal_offset = -1;
};

// rows[i] = the address of row j0 + i (rows past `last` repeat row `last`, so reading ahead to
// prefetch stays inside the data) for i in [0, n), row j being at
// pages[j / page_rows] + (j % page_rows) * row_stride + offset. The kernels read key and value
// rows only through such tables, so pages change no arithmetic: results are bit-identical for
// every page size.
void row_addresses(const float* const* pages, int64_t page_rows, int64_t row_stride, int64_t offset,
                   int64_t j0, int64_t n, int64_t last, const float** rows);
void row_addresses(const uint16_t* const* pages, int64_t page_rows, int64_t row_stride,
                   int64_t offset, int64_t j0, int64_t n, int64_t last, const uint16_t** rows);
void row_addresses(const int8_t* const* pages, int64_t page_rows, int64_t row_stride,
                   int64_t offset, int64_t j0, int64_t n, int64_t last, const int8_t** rows);

// Row j of kv head kvh of keys (values) as fp32: the stored row, or its conversion into tmp
// (head_dim floats). kv has its strides filled in (with_strides).
const float* key_row(const PagedKV& kv, int64_t j, int64_t kvh, const AttentionShape& s,
                     float* tmp);
const float* value_row(const PagedKV& kv, int64_t j, int64_t kvh, const AttentionShape& s,
                       float* tmp);
// The panels of Problem from nk positions of kv (strides filled in), threaded by the pool.
void pack_key_panels(const PagedKV& kv, int64_t nk, const AttentionShape& s, float* panels);
void pack_value_panels(const PagedKV& kv, int64_t nk, const AttentionShape& s, float* panels);

// Floats of scratch a task with `rows` rows per kv head and `heads` kv heads needs.
int64_t task_scratch_floats(int64_t rows, int64_t head_dim, int64_t heads);

// The kernels of a level. task computes out for queries [q_begin, q_end) of every query head of
// kv heads [kvh_begin, kvh_end); head_dim must be a multiple of 16. scratch:
// task_scratch_floats(rows, head_dim, kvh_end - kvh_begin) floats, rows = queries * group.
// decode_span: see attention_decode.h (never null); task may be null (the reference runs where it
// would). bf16_pairs and task_bf16 (AttentionShape::bf16_products;
// null where the level has no bf16 dot product): k_panels and v_panels of kv heads [kvh_begin,
// kvh_end) as bf16 pairs, k_pairs [n_kv_heads, tiles, head_dim / 2, kKeyTile] and v_pairs
// [n_kv_heads, head_dim / kKeyTile, ceil(nk / 2), kKeyTile] (uint32: keys 2j, 2j + 1 of a column;
// a missing last key is 0); then the task on them (same scratch as task).
struct DecodeTask;
using TaskKernel = void (*)(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin,
                            int64_t q_end, float* scratch);
struct AttentionKernels {
  TaskKernel task;
  void (*decode_span)(const Problem& p, const DecodeTask& task);
  void (*bf16_pairs)(const Problem& p, int64_t kvh_begin, int64_t kvh_end, uint32_t* k_pairs,
                     uint32_t* v_pairs);
  TaskKernel task_bf16;
};
// The kernels of `isa` (a level this CPU runs), or null where the level has none (the reference
// runs). Per architecture: src/ops/<arch>/kernel_registry.cpp.
const AttentionKernels* attention_kernels_for(IsaLevel isa);

// fp32 attention for heads that are not whole 16-float vectors: run on the kernels with rows
// zero-padded to padded_head_dim (attention_padded_heads.cpp). Same contract as ops::attention.
int64_t padded_head_dim(int64_t head_dim);
void attention_padded_heads(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
                            const AttentionShape& s, int64_t causal_offset, float* out);

}  // namespace qvl::ops::attention_kernels
