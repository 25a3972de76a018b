// Decode attention (internal to ops::attention): few query rows per kv head over a long KV cache,
// bound by reading the keys and values once, so it streams them split over threads.
//
// The positions are cut into spans of kDecodeSpan at fixed offsets (0, kDecodeSpan, ...). A task
// is one span x a run of kv heads: it reads its rows position by position (all heads of the run
// together, so a page is walked front to back), computes the span's scores for every row, their
// softmax against the span's own max and the unnormalised value sum: a partial state (o, m, l).
// The driver then merges the spans' states in span order. Span boundaries depend on nothing but
// the positions, and the merge order is fixed, so a row's result depends only on its own
// query and visible keys: not on the thread count, how heads are grouped into tasks, or the other
// rows of the call (batch invariance).
#pragma once

#include <cstdint>

#include "ops/attention_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::attention_kernels {

inline constexpr int64_t kDecodeSpan = 256;
inline constexpr int64_t kDecodeMaxRows = 8;  // rows (query x head-in-group) per kv head

// One task: kv heads [kvh_begin, kvh_end) over positions [j0, j1) (within one span). The partial
// state of kv head h, row r (rows = nq * group: query r / group, query head h * group + r % group)
// is written at state + (h * rows + r) * state_stride: o[head_dim] unnormalised, then m (the
// span's max score, -inf if the row sees no key of the span) and l (the sum of exp(score - m)).
struct DecodeTask {
  int64_t kvh_begin = 0, kvh_end = 0;
  int64_t j0 = 0, j1 = 0;
  float* state = nullptr;
  int64_t state_stride = 0;  // head_dim + 2
  // Scratch of heads * rows * kDecodeScoreStride floats.
  float* scratch = nullptr;
};
inline constexpr int64_t kDecodeScoreStride = kDecodeSpan + 16;

// A span kernel (p.k_panels and p.v_packed unused). head_dim must be a multiple of 16 (of
// kKvQ8Block for 8-bit storage), rows at most kDecodeMaxRows.
using DecodeSpanKernel = void (*)(const Problem& p, const DecodeTask& task);

// All of p.out with the span kernel, split into tasks over the global thread pool, then the merge.
void decode_attention(DecodeSpanKernel kernel, const Problem& p);

}  // namespace qvl::ops::attention_kernels
