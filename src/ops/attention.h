// Scaled dot-product attention with grouped KV heads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl::ops {

struct AttentionShape {
  int64_t n_heads = 0;     // query heads
  int64_t n_kv_heads = 0;  // key/value heads; query head h reads kv head h / (n_heads/n_kv_heads)
  int64_t head_dim = 0;
  float scale = 1.0f;
  // Where the CPU has AVX-512 BF16, QK^T and PV of many-row calls (vision, prompts) multiply
  // bf16-rounded q, k, probabilities and v with vdpbf16ps (fp32 sums, softmax and output): twice
  // the products per instruction. Elsewhere, and for decode-like calls, ignored (fp32).
  bool bf16_products = false;
};

// Query rows one causal call over a cache may take with every row computed exactly as if it came
// alone (decode-like calls: the attention streams the cache, a row's result depends only on its
// own query and visible keys). Speculative decoding verifies drafts in blocks of this many rows.
int64_t attention_row_invariant_queries(const AttentionShape& shape);

// q: [nq, n_heads, head_dim]; k, v: [nk, n_kv_heads, head_dim]; out: [nq, n_heads, head_dim].
// causal_offset >= 0: query i sees keys [0, causal_offset + i]; < 0: every key (non-causal).
void attention(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
               const AttentionShape& shape, int64_t causal_offset, float* out);
// The same with k and v stored as IEEE half (the 16-bit KV cache); math stays fp32.
void attention(const float* q, int64_t nq, const uint16_t* k, const uint16_t* v, int64_t nk,
               const AttentionShape& shape, int64_t causal_offset, float* out);
// The same with k and v in the 8-bit format of ops/kv_q8.h: position j, kv head h is the row of
// kv_q8_bytes(head_dim) bytes at (j * n_kv_heads + h) * kv_q8_bytes(head_dim). head_dim must be a
// multiple of 32.
void attention(const float* q, int64_t nq, const int8_t* k, const int8_t* v, int64_t nk,
               const AttentionShape& shape, int64_t causal_offset, float* out);

// Keys and values split into pages of page_rows positions: position j of kv head h is at
//   k_pages[j / page_rows] + (j % page_rows) * row_stride + h * head_stride   (same for v),
// counted in elements (fp32, half) or, for 8-bit, in bytes (a head's row is kv_q8_bytes(head_dim)
// bytes: whole blocks, so any head_stride keeps it self-contained). Strides 0 mean
// position-major pages [page_rows][n_kv_heads][head_dim] (row_stride = n_kv_heads * head row,
// head_stride = head row); head-major pages [n_kv_heads][page_rows][head_dim] have row_stride =
// head row and head_stride = page_rows * head row. Exactly one storage is set: fp32
// (k_pages/v_pages), IEEE half (k16_pages/v16_pages) or 8-bit (k8_pages/v8_pages). page_rows must
// be a multiple of 16.
struct PagedKV {
  const float* const* k_pages = nullptr;
  const float* const* v_pages = nullptr;
  const uint16_t* const* k16_pages = nullptr;
  const uint16_t* const* v16_pages = nullptr;
  const int8_t* const* k8_pages = nullptr;
  const int8_t* const* v8_pages = nullptr;
  int64_t page_rows = 0;
  int64_t row_stride = 0;   // between positions of a page (0: n_kv_heads * head row)
  int64_t head_stride = 0;  // between kv heads of a position (0: one head row)
};
// The strides of kv with the zeros filled in for `shape` (the units of its storage).
PagedKV with_strides(const PagedKV& kv, const AttentionShape& shape);
// The same as attention() above with keys/values read through the pages (nk positions).
// Bit-identical to the contiguous overloads on the same numbers, for every page size: the
// contiguous calls are this one with a single page.
void attention(const float* q, int64_t nq, const PagedKV& kv, int64_t nk,
               const AttentionShape& shape, int64_t causal_offset, float* out);

// The arithmetic of QK^T and PV in many-row calls with this bf16_products: "bf16" where vdpbf16ps
// runs them (AVX-512 BF16 active and its self-check passed), else "fp32".
const char* attention_products_name(bool bf16_products);

// Frees the calling thread's K/V panels, which otherwise keep the size of its largest call (e.g.
// an image's on a request thread, a long prompt's on the scheduler's), unless they hold at most
// keep_bytes (a chat's next prompt then finds them mapped in); the next call allocates again.
void release_attention_scratch(size_t keep_bytes = 0);
// The bytes those panels hold now (for tests).
size_t attention_scratch_bytes();

}  // namespace qvl::ops
