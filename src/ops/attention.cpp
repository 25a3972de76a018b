#include "ops/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/half.h"
#include "base/log.h"
#include "base/stage_profile.h"
#include "base/thread_pool.h"
#include "ops/attention_decode.h"
#include "ops/attention_kernels.h"
#include "ops/half_convert.h"
#include "ops/kv_q8.h"
#include "ops/matmul.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace attention_kernels {

void attention_reference(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
                         const AttentionShape& s, int64_t causal_offset, float* out) {
  const int64_t group = s.n_heads / s.n_kv_heads;
  const int64_t d = s.head_dim;
  ThreadPool::global().parallel_for(static_cast<size_t>(nq * s.n_heads), [&](size_t t0, size_t t1) {
    std::vector<float> scores(static_cast<size_t>(nk));
    for (size_t t = t0; t < t1; ++t) {
      const int64_t i = static_cast<int64_t>(t) / s.n_heads;
      const int64_t h = static_cast<int64_t>(t) % s.n_heads;
      const int64_t kvh = h / group;
      const int64_t visible = causal_offset < 0 ? nk : std::min(nk, causal_offset + i + 1);
      const float* qi = q + (i * s.n_heads + h) * d;
      float max_score = -INFINITY;
      for (int64_t j = 0; j < visible; ++j) {
        scores[j] = dot_f32(qi, k + (j * s.n_kv_heads + kvh) * d, d) * s.scale;
        max_score = std::max(max_score, scores[j]);
      }
      float sum = 0;
      for (int64_t j = 0; j < visible; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      const float inv = 1.0f / sum;
      float* o = out + (i * s.n_heads + h) * d;
      std::fill(o, o + d, 0.0f);
      for (int64_t j = 0; j < visible; ++j) {
        const float p = scores[j] * inv;
        const float* vj = v + (j * s.n_kv_heads + kvh) * d;
        for (int64_t c = 0; c < d; ++c) o[c] += p * vj[c];
      }
    }
  });
}

namespace {

template <typename T>
void fill_row_addresses(const T* const* pages, int64_t page_rows, int64_t row_stride,
                        int64_t offset, int64_t j0, int64_t n, int64_t last, const T** rows) {
  auto address = [&](int64_t j) {
    return pages[j / page_rows] + (j % page_rows) * row_stride + offset;
  };
  const int64_t in_data = std::clamp<int64_t>(last + 1 - j0, 0, n);
  int64_t i = 0;
  while (i < in_data) {  // one division per page, not per row
    const int64_t run = std::min(in_data - i, page_rows - (j0 + i) % page_rows);
    const T* first = address(j0 + i);
    for (int64_t x = 0; x < run; ++x) rows[i + x] = first + x * row_stride;
    i += run;
  }
  const T* last_row = address(last);
  for (; i < n; ++i) rows[i] = last_row;
}

}  // namespace

void row_addresses(const float* const* pages, int64_t page_rows, int64_t row_stride, int64_t offset,
                   int64_t j0, int64_t n, int64_t last, const float** rows) {
  fill_row_addresses(pages, page_rows, row_stride, offset, j0, n, last, rows);
}

void row_addresses(const uint16_t* const* pages, int64_t page_rows, int64_t row_stride,
                   int64_t offset, int64_t j0, int64_t n, int64_t last, const uint16_t** rows) {
  fill_row_addresses(pages, page_rows, row_stride, offset, j0, n, last, rows);
}

void row_addresses(const int8_t* const* pages, int64_t page_rows, int64_t row_stride,
                   int64_t offset, int64_t j0, int64_t n, int64_t last, const int8_t** rows) {
  fill_row_addresses(pages, page_rows, row_stride, offset, j0, n, last, rows);
}

int64_t task_scratch_floats(int64_t rows, int64_t head_dim, int64_t heads) {
  // Kernels pad rows to their register block (at most 8), keep o, m, l and a scaled copy of q
  // per row, and up to 8 rows x kKeyBlock scores.
  return heads * (rows + 8) * (2 * head_dim + 2) + 8 * kKeyBlock;
}

}  // namespace attention_kernels

namespace {

using attention_kernels::key_row;
using attention_kernels::kKeyTile;
using attention_kernels::pack_key_panels;
using attention_kernels::pack_value_panels;
using attention_kernels::value_row;

// The contiguous storage as a single page of all nk rows (internally a page may hold any number
// of rows; the public multiple-of-16 rule only keeps that freedom for later).
// The page-table fields of each storage type.
void set_pages(PagedKV& kv, const float* const* k, const float* const* v) {
  kv.k_pages = k;
  kv.v_pages = v;
}
void set_pages(PagedKV& kv, const uint16_t* const* k, const uint16_t* const* v) {
  kv.k16_pages = k;
  kv.v16_pages = v;
}
void set_pages(PagedKV& kv, const int8_t* const* k, const int8_t* const* v) {
  kv.k8_pages = k;
  kv.v8_pages = v;
}
template <typename T>
PagedKV one_page(const T* const* k, const T* const* v, int64_t nk) {
  PagedKV kv;
  set_pages(kv, k, v);
  kv.page_rows = std::max<int64_t>(nk, 1);
  return kv;
}

// The calling thread's K and V panels, kept from call to call: an image's (25 MB for 1024x768)
// would otherwise be mapped and faulted in afresh for every layer (15% of vision attention).
struct Panels {
  AlignedBuffer<float> keys, values;
  AlignedBuffer<uint32_t> k_pairs, v_pairs;  // bf16 products
};
thread_local Panels t_panels;
constexpr int64_t kPanelRoom = 256;

// The reference on contiguous fp32 copies of paged or half keys/values.
void reference_on(const float* q, int64_t nq, const PagedKV& kv, int64_t nk,
                  const AttentionShape& s, int64_t causal_offset, float* out) {
  const bool position_major =
      kv.row_stride == s.n_kv_heads * s.head_dim && kv.head_stride == s.head_dim;
  if (kv.k_pages != nullptr && nk > 0 && nk <= kv.page_rows && position_major) {
    attention_kernels::attention_reference(q, nq, kv.k_pages[0], kv.v_pages[0], nk, s,
                                           causal_offset, out);
    return;
  }
  const int64_t d = s.head_dim;
  std::vector<float> k(static_cast<size_t>(nk * s.n_kv_heads * d)), v(k.size());
  for (int64_t j = 0; j < nk; ++j) {
    for (int64_t kvh = 0; kvh < s.n_kv_heads; ++kvh) {
      float* k_dst = k.data() + (j * s.n_kv_heads + kvh) * d;
      float* v_dst = v.data() + (j * s.n_kv_heads + kvh) * d;
      const float* k_row = key_row(kv, j, kvh, s, k_dst);
      const float* v_row = value_row(kv, j, kvh, s, v_dst);
      if (k_row != k_dst) std::copy(k_row, k_row + d, k_dst);
      if (v_row != v_dst) std::copy(v_row, v_row + d, v_dst);
    }
  }
  attention_kernels::attention_reference(q, nq, k.data(), v.data(), nk, s, causal_offset, out);
}

// attention_on with the bf16 products decided: bf16 needs a level with task_bf16.
void attention_with(IsaLevel isa, bool bf16, const float* q, int64_t nq, const PagedKV& given,
                    int64_t nk, const AttentionShape& s, int64_t causal_offset, float* out) {
  const PagedKV kv = with_strides(given, s);
  const bool q8 = kv.k8_pages != nullptr;
  const bool fast_shape = s.head_dim > 0 && s.head_dim % (q8 ? kKvQ8Block : 16) == 0 &&
                          s.n_kv_heads > 0 && s.n_heads % s.n_kv_heads == 0 && nk > 0;
  const attention_kernels::AttentionKernels* kernels =
      isa == IsaLevel::kScalar ? nullptr : attention_kernels::attention_kernels_for(isa);
  if (kernels == nullptr || !fast_shape) {
    reference_on(q, nq, kv, nk, s, causal_offset, out);
    return;
  }
  bf16 = bf16 && kernels->task_bf16 != nullptr;
  if (nq <= 0) return;
  const int64_t group = s.n_heads / s.n_kv_heads;
  attention_kernels::Problem p;
  p.q = q;
  p.kv = kv;
  p.out = out;
  p.nq = nq;
  p.nk = nk;
  p.shape = s;
  p.causal_offset = causal_offset;
  // Few rows (query x head-in-group) per key, as in decode: stream the cache split over positions.
  if (nq * group <= attention_kernels::kDecodeMaxRows) {
    attention_kernels::decode_attention(kernels->decode_span, p);
    return;
  }
  // Enough rows share each key for transposing K (and packing V per head) to pay off. A level
  // without a flash task (decode kernels only) runs the reference for such calls.
  if (kernels->task == nullptr) {
    reference_on(q, nq, kv, nk, s, causal_offset, out);
    return;
  }
  const int64_t tiles = (nk + kKeyTile - 1) / kKeyTile;
  // Grown with room for 256 more positions: a conversation's next prompt (a few more) then
  // reuses the mapped panels instead of faulting fresh ones in.
  const auto fit = [&](AlignedBuffer<float>& buffer) {
    const int64_t per_position = s.n_kv_heads * s.head_dim;
    if (buffer.size() < static_cast<size_t>(tiles * kKeyTile * per_position)) {
      buffer.resize(static_cast<size_t>((tiles * kKeyTile + kPanelRoom) * per_position));
    }
  };
  AlignedBuffer<float>& panels = t_panels.keys;
  fit(panels);
  pack_key_panels(kv, nk, s, panels.data());
  AlignedBuffer<float>& values = t_panels.values;
  fit(values);
  pack_value_panels(kv, nk, s, values.data());
  p.k_panels = panels.data();
  p.v_panels = values.data();
  if (bf16) {
    AlignedBuffer<uint32_t>& k_pairs = t_panels.k_pairs;
    AlignedBuffer<uint32_t>& v_pairs = t_panels.v_pairs;
    k_pairs.resize(panels.size() / 2);
    v_pairs.resize(values.size() / 2);
    ThreadPool::global().parallel_for(static_cast<size_t>(s.n_kv_heads), [&](size_t b, size_t e) {
      kernels->bf16_pairs(p, static_cast<int64_t>(b), static_cast<int64_t>(e), k_pairs.data(),
                          v_pairs.data());
    });
    p.k_pairs = k_pairs.data();
    p.v_pairs = v_pairs.data();
  }
  const auto run = bf16 ? kernels->task_bf16 : kernels->task;
  // About 64 rows (query x head-in-group pairs) per task: K/V blocks are reused across them.
  const int64_t block = std::max<int64_t>(1, 64 / group);
  const int64_t n_blocks = (nq + block - 1) / block;
  const int64_t scratch = attention_kernels::task_scratch_floats(block * group, s.head_dim, 1);
  ThreadPool::global().parallel_for(
      static_cast<size_t>(n_blocks * s.n_kv_heads), [&](size_t b, size_t e) {
        AlignedBuffer<float> buffer(static_cast<size_t>(scratch));
        for (size_t t = b; t < e; ++t) {
          const int64_t kvh = static_cast<int64_t>(t) % s.n_kv_heads;
          const int64_t q_begin = static_cast<int64_t>(t) / s.n_kv_heads * block;
          run(p, kvh, kvh + 1, q_begin, std::min(nq, q_begin + block), buffer.data());
        }
      });
}

// The bf16 task on a few problems (full and causal, key counts odd and even, GQA) against the
// fp32 reference: bf16 rounding moves these outputs by ~1e-3, a wrong kernel by ~1.
bool bf16_agrees_with_reference(IsaLevel isa) {
  const AttentionShape shape{4, 2, 64, 0.125f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (const auto [nq, nk, causal_offset] :
       {std::array<int64_t, 3>{40, 40, 0}, {37, 151, -1}, {33, 150, 117}}) {
    std::vector<float> q(static_cast<size_t>(nq * 4 * 64)), k(static_cast<size_t>(nk * 2 * 64));
    std::vector<float> v(k.size()), want(q.size()), got(q.size());
    for (auto* buf : {&q, &k, &v}) {
      for (auto& x : *buf) x = dist(rng);
    }
    attention_kernels::attention_reference(q.data(), nq, k.data(), v.data(), nk, shape,
                                           causal_offset, want.data());
    const float* kp = k.data();
    const float* vp = v.data();
    attention_with(isa, true, q.data(), nq, one_page(&kp, &vp, nk), nk, shape, causal_offset,
                   got.data());
    for (size_t i = 0; i < got.size(); ++i) {
      if (!(std::fabs(got[i] - want[i]) <= 2e-2f)) {
        QVL_LOG(kError) << "bf16 attention kernel disagrees with the reference (" << got[i]
                        << " vs " << want[i] << "); attention stays fp32";
        return false;
      }
    }
  }
  return true;
}

constexpr int kLevels = 8;

// Whether `isa` has bf16 attention products and they passed their check.
bool bf16_task_verified(IsaLevel isa) {
  const attention_kernels::AttentionKernels* k =
      isa == IsaLevel::kScalar ? nullptr : attention_kernels::attention_kernels_for(isa);
  if (k == nullptr || k->task_bf16 == nullptr) return false;
  static std::once_flag once[kLevels];
  static bool ok[kLevels];
  const auto i = static_cast<size_t>(isa);
  std::call_once(once[i], [&] { ok[i] = bf16_agrees_with_reference(isa); });
  return ok[i];
}

void attention_on(IsaLevel isa, const float* q, int64_t nq, const PagedKV& kv, int64_t nk,
                  const AttentionShape& s, int64_t causal_offset, float* out) {
  const bool bf16 = s.bf16_products && bf16_task_verified(isa);
  attention_with(isa, bf16, q, nq, kv, nk, s, causal_offset, out);
}

// rows [nk, row_elems] in pages of kCheckPageRows rows, stored in reverse order in `pool` (a
// pool hands pages out in any order); returns the page addresses.
constexpr int64_t kCheckPageRows = 16;
template <typename T>
std::vector<const T*> reversed_pages(const std::vector<T>& rows, int64_t nk, int64_t row_elems,
                                     std::vector<T>& pool) {
  const int64_t n_pages = (nk + kCheckPageRows - 1) / kCheckPageRows;
  const int64_t page_elems = kCheckPageRows * row_elems;
  pool.assign(static_cast<size_t>(n_pages * page_elems), T{});
  std::vector<const T*> pages(static_cast<size_t>(n_pages));
  for (int64_t x = 0; x < n_pages; ++x) {
    T* dst = pool.data() + (n_pages - 1 - x) * page_elems;
    const int64_t count = std::min(kCheckPageRows, nk - x * kCheckPageRows) * row_elems;
    std::copy(rows.begin() + x * page_elems, rows.begin() + x * page_elems + count, dst);
    pages[static_cast<size_t>(x)] = dst;
  }
  return pages;
}

// One small problem per code path (K panels, decode spans and their merge, causal and not)
// against the reference, for every storage; the same through shuffled 16-row pages must give the
// same bits.
bool agrees_with_reference(IsaLevel isa) {
  struct Check {
    int64_t nq, nk, causal_offset;
  };
  const AttentionShape shape{4, 2, 64, 0.125f};
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f * 4.0f - 2.0f;
  };
  // (The last one spans three decode spans: it checks their merge.)
  for (const Check c : {Check{40, 40, 0}, Check{37, 150, -1}, Check{1, 150, 149}, Check{3, 9, 6},
                        Check{2, 600, 598}}) {
    std::vector<float> q(static_cast<size_t>(c.nq * 4 * 64)), k(static_cast<size_t>(c.nk * 2 * 64));
    std::vector<float> v(k.size()), want(q.size()), got(q.size());
    for (auto* buf : {&q, &k, &v}) {
      for (auto& x : *buf) x = next();
    }
    // Both storages: values rounded to half first, so fp32 and half inputs hold the same numbers.
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k16[i] = kernels::f32_to_f16(k[i]);
      v16[i] = kernels::f32_to_f16(v[i]);
      k[i] = f16_to_f32(k16[i]);
      v[i] = f16_to_f32(v16[i]);
    }
    attention_kernels::attention_reference(q.data(), c.nq, k.data(), v.data(), c.nk, shape,
                                           c.causal_offset, want.data());
    // 8-bit storage holds other numbers: its reference runs on the dequantized values.
    const int64_t row_values = 2 * 64;
    std::vector<int8_t> k8(static_cast<size_t>(c.nk * kv_q8_bytes(row_values))), v8(k8.size());
    std::vector<float> k8f(k.size()), v8f(v.size()), want8(q.size());
    for (int64_t j = 0; j < c.nk; ++j) {
      quantize_kv_q8(k.data() + j * row_values, row_values,
                     k8.data() + j * kv_q8_bytes(row_values));
      quantize_kv_q8(v.data() + j * row_values, row_values,
                     v8.data() + j * kv_q8_bytes(row_values));
    }
    dequantize_kv_q8(k8.data(), c.nk * row_values, k8f.data());
    dequantize_kv_q8(v8.data(), c.nk * row_values, v8f.data());
    attention_kernels::attention_reference(q.data(), c.nq, k8f.data(), v8f.data(), c.nk, shape,
                                           c.causal_offset, want8.data());
    const float* kp = k.data();
    const float* vp = v.data();
    const uint16_t* k16p = k16.data();
    const uint16_t* v16p = v16.data();
    const int8_t* k8p = k8.data();
    const int8_t* v8p = v8.data();
    std::vector<float> k_pool, v_pool, got_paged(q.size());
    std::vector<uint16_t> k16_pool, v16_pool;
    std::vector<int8_t> k8_pool, v8_pool;
    const auto k_pages = reversed_pages(k, c.nk, row_values, k_pool);
    const auto v_pages = reversed_pages(v, c.nk, row_values, v_pool);
    const auto k16_pages = reversed_pages(k16, c.nk, row_values, k16_pool);
    const auto v16_pages = reversed_pages(v16, c.nk, row_values, v16_pool);
    const auto k8_pages = reversed_pages(k8, c.nk, kv_q8_bytes(row_values), k8_pool);
    const auto v8_pages = reversed_pages(v8, c.nk, kv_q8_bytes(row_values), v8_pool);
    PagedKV paged[3];
    paged[0].k_pages = k_pages.data();
    paged[0].v_pages = v_pages.data();
    paged[1].k16_pages = k16_pages.data();
    paged[1].v16_pages = v16_pages.data();
    paged[2].k8_pages = k8_pages.data();
    paged[2].v8_pages = v8_pages.data();
    const PagedKV whole[3] = {one_page(&kp, &vp, c.nk), one_page(&k16p, &v16p, c.nk),
                              one_page(&k8p, &v8p, c.nk)};
    const char* names[3] = {"fp32", "half", "8-bit"};
    for (int storage = 0; storage < 3; ++storage) {
      paged[storage].page_rows = kCheckPageRows;
      const std::vector<float>& expected = storage == 2 ? want8 : want;
      attention_on(isa, q.data(), c.nq, whole[storage], c.nk, shape, c.causal_offset, got.data());
      attention_on(isa, q.data(), c.nq, paged[storage], c.nk, shape, c.causal_offset,
                   got_paged.data());
      for (size_t i = 0; i < got.size(); ++i) {
        if (!(std::fabs(got[i] - expected[i]) <= 1e-4f) ||
            std::memcmp(&got[i], &got_paged[i], sizeof(float)) != 0) {
          QVL_LOG(kError) << isa_level_name(isa)
                          << " attention kernel disagrees with the reference (" << got[i] << " vs "
                          << expected[i] << ", paged " << got_paged[i] << ", " << names[storage]
                          << " K/V); using a lower level";
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

namespace attention_kernels {

bool kernels_verified(IsaLevel isa) {
  if (isa == IsaLevel::kScalar || attention_kernels_for(isa) == nullptr) return true;
  static std::once_flag once[kLevels];
  static bool ok[kLevels];
  const auto i = static_cast<size_t>(isa);
  std::call_once(once[i], [&] { ok[i] = agrees_with_reference(isa); });
  return ok[i];
}

}  // namespace attention_kernels

namespace {

IsaLevel attention_isa() {
  IsaLevel isa = active_isa();
  while (isa != IsaLevel::kScalar && !attention_kernels::kernels_verified(isa)) {
    isa = lower_isa_level(isa);
  }
  return isa;
}

}  // namespace

PagedKV with_strides(const PagedKV& kv, const AttentionShape& s) {
  PagedKV out = kv;
  const int64_t head_row = kv.k8_pages != nullptr ? kv_q8_bytes(s.head_dim) : s.head_dim;
  if (out.head_stride == 0) out.head_stride = head_row;
  if (out.row_stride == 0) out.row_stride = s.n_kv_heads * head_row;
  return out;
}

const char* attention_products_name(bool bf16_products) {
  return bf16_products && bf16_task_verified(attention_isa()) ? "bf16" : "fp32";
}

size_t attention_scratch_bytes() {
  return (t_panels.keys.size() + t_panels.values.size()) * sizeof(float) +
         (t_panels.k_pairs.size() + t_panels.v_pairs.size()) * sizeof(uint32_t);
}

void release_attention_scratch(size_t keep_bytes) {
  if (attention_scratch_bytes() > keep_bytes) t_panels = Panels{};
}

void attention(const float* q, int64_t nq, const float* k, const float* v, int64_t nk,
               const AttentionShape& s, int64_t causal_offset, float* out) {
  const IsaLevel isa = attention_isa();
  if (isa != IsaLevel::kScalar && s.head_dim > 0 && s.head_dim % attention_kernels::kKeyTile != 0) {
    attention_kernels::attention_padded_heads(q, nq, k, v, nk, s, causal_offset, out);
    return;
  }
  const profile::StageScope stage(profile::Work::kAttention);
  attention_on(isa, q, nq, one_page(&k, &v, nk), nk, s, causal_offset, out);
}

void attention(const float* q, int64_t nq, const uint16_t* k, const uint16_t* v, int64_t nk,
               const AttentionShape& s, int64_t causal_offset, float* out) {
  const profile::StageScope stage(profile::Work::kAttention);
  attention_on(attention_isa(), q, nq, one_page(&k, &v, nk), nk, s, causal_offset, out);
}

void attention(const float* q, int64_t nq, const int8_t* k, const int8_t* v, int64_t nk,
               const AttentionShape& s, int64_t causal_offset, float* out) {
  const profile::StageScope stage(profile::Work::kAttention);
  QVL_CHECK(s.head_dim % kKvQ8Block == 0);
  attention_on(attention_isa(), q, nq, one_page(&k, &v, nk), nk, s, causal_offset, out);
}

int64_t attention_row_invariant_queries(const AttentionShape& s) {
  // Rows within the decode path's limit (attention_with); the reference, used elsewhere, computes
  // every row on its own anyway.
  const int64_t group = s.n_kv_heads > 0 ? std::max<int64_t>(1, s.n_heads / s.n_kv_heads) : 1;
  return std::max<int64_t>(1, attention_kernels::kDecodeMaxRows / group);
}

void attention(const float* q, int64_t nq, const PagedKV& kv, int64_t nk, const AttentionShape& s,
               int64_t causal_offset, float* out) {
  const profile::StageScope stage(profile::Work::kAttention);
  QVL_CHECK(kv.page_rows > 0 && kv.page_rows % attention_kernels::kKeyTile == 0);
  const int storages = (kv.k_pages != nullptr && kv.v_pages != nullptr) +
                       (kv.k16_pages != nullptr && kv.v16_pages != nullptr) +
                       (kv.k8_pages != nullptr && kv.v8_pages != nullptr);
  const int pointers = (kv.k_pages != nullptr) + (kv.v_pages != nullptr) +
                       (kv.k16_pages != nullptr) + (kv.v16_pages != nullptr) +
                       (kv.k8_pages != nullptr) + (kv.v8_pages != nullptr);
  QVL_CHECK(storages == 1 && pointers == 2);
  QVL_CHECK(kv.k8_pages == nullptr || s.head_dim % kKvQ8Block == 0);
  attention_on(attention_isa(), q, nq, kv, nk, s, causal_offset, out);
}

}  // namespace qvl::ops
