// The AVX-512 decode span kernel (attention_decode_avx512.inc with the shared driver
// attention_decode_span.inc) compiled against the scalar model of the intrinsics
// (avx512_model*.inc), so it runs here without AVX-512. Driven as decode_attention() drives it
// (spans of kDecodeSpan positions x runs of kv heads, then the merge of the spans' states) over
// fp32, half and 8-bit caches, contiguous and in shuffled pages poisoned with NaN: against the
// scalar reference with attention_decode_test.cpp's tolerance on tail shapes (1 position, below,
// at and past a span, rows that see nothing of a span, head_dim 16..128, GQA groups 1, 2, 4),
// and bit-identical for every page size, page layout (position- or head-major, strided rows) and
// every split of the heads into runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "ops/attention.h"
#include "ops/attention_decode.h"
#include "ops/attention_kernels.h"
#include "ops/exp2_polynomial.h"
#include "ops/isa_test_util.h"
#include "ops/kv_cache_fixture.h"
#include "ops/kv_pages_fixture.h"
#include "ops/kv_q8.h"
#include "ops/packed_kernels.h"
#include "ops/x86/attention_x86.h"

#ifdef _IMMINTRIN_H_INCLUDED
#error "the AVX-512 model below must not meet the real intrinsics (some are macros)"
#endif

namespace qvl::ops::attention_kernels::avx512_model {
namespace {
// In this order: the model, the vector math, the micro-kernels, the shared span driver.
#include "avx512_model.inc"
#include "avx512_model_float.inc"
// (keeps clang-format from sorting the fragments)
#include "ops/x86/elementwise_avx512_math.inc"
// (the micro-kernels use the math above)
#include "ops/x86/attention_decode_avx512.inc"
// (the driver uses the micro-kernels above)
#include "ops/attention_decode_span.inc"
}  // namespace

void decode_span(const Problem& p, const DecodeTask& task) {
  run_span(p, task);
}

}  // namespace qvl::ops::attention_kernels::avx512_model

namespace qvl::ops {
namespace {

using attention_kernels::DecodeTask;
using attention_kernels::kDecodeScoreStride;
using attention_kernels::kDecodeSpan;
using attention_kernels::Problem;
using testing::random_vector;

using testing::Cache;
using testing::make_cache;
using testing::Storage;
using testing::storage_name;

// Whole rows (row_units each) in pages of page_rows rows in shuffled slots of a pool; spare slots
// and unused tail rows hold `poison` (the fixture's scatter with one "head" per row).
template <typename T>
using Pool = testing::PagePool<T>;
template <typename T>
Pool<T> paginate(const std::vector<T>& rows, int64_t nk, int64_t row_units, int64_t page_rows,
                 T poison, uint32_t seed) {
  return testing::scatter_pages(rows, nk, 1, row_units, page_rows,
                                {.row = row_units, .head = row_units}, poison, seed);
}

// The cache in pages of page_rows positions (0: one page), kept alive with its PagedKV.
struct PagedCache {
  Pool<float> k, v;
  Pool<uint16_t> k16, v16;
  Pool<int8_t> k8, v8;
  PagedKV kv;
};
void paginate_cache(const Cache& c, int64_t nk, int64_t row_elems, int64_t page_rows,
                    PagedCache& out) {
  const int64_t rows = page_rows > 0 ? page_rows : (nk + 15) / 16 * 16;
  out.kv = PagedKV{};
  out.kv.page_rows = rows;
  if (c.storage == Storage::kF16) {
    out.k16 = paginate<uint16_t>(c.k16, nk, row_elems, rows, 0x7e00, 1);  // NaN
    out.v16 = paginate<uint16_t>(c.v16, nk, row_elems, rows, 0x7e00, 2);
    out.kv.k16_pages = out.k16.pages.data();
    out.kv.v16_pages = out.v16.pages.data();
  } else if (c.storage == Storage::kQ8) {
    const int64_t bytes = kv_q8_bytes(row_elems);
    out.k8 = paginate<int8_t>(c.k8, nk, bytes, rows, static_cast<int8_t>(0xff), 3);  // NaN scales
    out.v8 = paginate<int8_t>(c.v8, nk, bytes, rows, static_cast<int8_t>(0xff), 4);
    out.kv.k8_pages = out.k8.pages.data();
    out.kv.v8_pages = out.v8.pages.data();
  } else {
    out.k = paginate<float>(c.k, nk, row_elems, rows, NAN, 5);
    out.v = paginate<float>(c.v, nk, row_elems, rows, NAN, 6);
    out.kv.k_pages = out.k.pages.data();
    out.kv.v_pages = out.v.pages.data();
  }
}

// As decode_attention(): the span kernel per (span, run of heads_per_run kv heads), then each
// row's spans merged in order (out = sum w_s o_s / sum w_s l_s, w_s = exp(m_s - max m)).
std::vector<float> decode_on_model(const Problem& base, int64_t heads_per_run) {
  const AttentionShape& s = base.shape;
  const int64_t group = s.n_heads / s.n_kv_heads, rows = base.nq * group, d = s.head_dim;
  const int64_t keys =
      base.causal_offset >= 0 ? std::min(base.nk, base.causal_offset + base.nq) : base.nk;
  const int64_t spans = (keys + kDecodeSpan - 1) / kDecodeSpan;
  const int64_t stride = d + 2, span_floats = s.n_kv_heads * rows * stride;
  std::vector<float> states(static_cast<size_t>(spans * span_floats), NAN);
  for (int64_t span = 0; span < spans; ++span) {
    for (int64_t h0 = 0; h0 < s.n_kv_heads; h0 += heads_per_run) {
      // Scratch poisoned with NaN: reading a score that was not written shows.
      std::vector<float> scratch(static_cast<size_t>(heads_per_run * rows * kDecodeScoreStride),
                                 NAN);
      DecodeTask t;
      t.kvh_begin = h0;
      t.kvh_end = std::min(s.n_kv_heads, h0 + heads_per_run);
      t.j0 = span * kDecodeSpan;
      t.j1 = std::min(keys, t.j0 + kDecodeSpan);
      t.state = states.data() + span * span_floats;
      t.state_stride = stride;
      t.scratch = scratch.data();
      attention_kernels::avx512_model::decode_span(base, t);
    }
  }
  std::vector<float> out(static_cast<size_t>(base.nq * s.n_heads * d));
  for (int64_t h = 0; h < s.n_kv_heads; ++h) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* st0 = states.data() + (h * rows + r) * stride;
      float* o = out.data() + ((r / group) * s.n_heads + h * group + r % group) * d;
      float m = -INFINITY, l = 0;
      for (int64_t x = 0; x < spans; ++x) m = std::max(m, st0[x * span_floats + d]);
      std::fill(o, o + d, 0.0f);
      for (int64_t x = 0; x < spans; ++x) {
        const float* st = st0 + x * span_floats;
        if (st[d] == -INFINITY) continue;  // the row sees nothing of this span
        const float w = std::exp(st[d] - m);
        l += w * st[d + 1];
        for (int64_t c = 0; c < d; ++c) o[c] += w * st[c];
      }
      for (int64_t c = 0; c < d; ++c) o[c] /= l;
    }
  }
  return out;
}

std::vector<float> attend(const Cache& cache, const std::vector<float>& q, int64_t nq, int64_t nk,
                          const AttentionShape& s, int64_t offset, int64_t page_rows,
                          int64_t heads_per_run) {
  PagedCache paged;
  paginate_cache(cache, nk, s.n_kv_heads * s.head_dim, page_rows, paged);
  Problem p;
  p.q = q.data();
  p.kv = paged.kv;
  p.nq = nq;
  p.nk = nk;
  p.shape = s;
  p.causal_offset = offset;
  return decode_on_model(p, heads_per_run);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(DecodeAttentionAvx512Model, MatchesReferenceOnTailShapes) {
  struct Heads {
    int64_t n_heads, n_kv_heads, head_dim;
  };
  uint32_t seed = 11;
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const Heads h :
         {Heads{4, 2, 64}, Heads{2, 2, 16}, Heads{8, 2, 48}, Heads{4, 1, 96}, Heads{16, 8, 128}}) {
      if (storage == Storage::kQ8 && h.head_dim % kKvQ8Block != 0) continue;
      const AttentionShape s{h.n_heads, h.n_kv_heads, h.head_dim,
                             1.0f / std::sqrt(static_cast<float>(h.head_dim))};
      const int64_t group = h.n_heads / h.n_kv_heads;
      for (const int64_t nk : {int64_t{1}, int64_t{5}, int64_t{17}, kDecodeSpan - 1, kDecodeSpan,
                               kDecodeSpan + 1, 3 * kDecodeSpan - 70}) {
        const Cache cache = make_cache(nk, h.n_kv_heads * h.head_dim, storage, seed);
        for (const int64_t nq : {int64_t{1}, int64_t{2}, int64_t{4}}) {
          if (nq > nk || nq * group > attention_kernels::kDecodeMaxRows) continue;
          for (const bool causal : {true, false}) {
            const float sigma = seed % 2 ? 1.0f : 5.0f;  // 5: sharp softmax, large scores
            const auto q =
                random_vector(static_cast<size_t>(nq * h.n_heads * h.head_dim), seed++, sigma);
            const int64_t offset = causal ? nk - nq : -1;
            std::vector<float> want(q.size());
            attention_kernels::attention_reference(q.data(), nq, cache.k.data(), cache.v.data(), nk,
                                                   s, offset, want.data());
            const auto got = attend(cache, q, nq, nk, s, offset, 0, h.n_kv_heads);
            float worst = 0;
            for (size_t i = 0; i < got.size(); ++i) {
              worst =
                  std::isfinite(got[i]) ? std::max(worst, std::fabs(got[i] - want[i])) : INFINITY;
            }
            EXPECT_LE(worst, 2e-5f) << storage_name(storage) << " heads " << h.n_heads << "/"
                                    << h.n_kv_heads << " d=" << h.head_dim << " nq=" << nq
                                    << " nk=" << nk << " causal=" << causal << " sigma=" << sigma;
          }
        }
      }
    }
  }
}

TEST(DecodeAttentionAvx512Model, PagesAndHeadRunsChangeNoBit) {
  // Qwen3-VL 2B text attention (16 query heads on 8 kv heads of 128) and the vision shape.
  for (const AttentionShape s :
       {AttentionShape{16, 8, 128, 1.0f / std::sqrt(128.0f)}, AttentionShape{16, 16, 64, 0.125f}}) {
    for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
      for (const int64_t nk : {int64_t{40}, int64_t{600}}) {
        const Cache cache = make_cache(nk, s.n_kv_heads * s.head_dim, storage, 21);
        const int64_t nq = s.n_heads == 2 * s.n_kv_heads ? 3 : 1;
        const auto q = random_vector(static_cast<size_t>(nq * s.n_heads * s.head_dim), 22, 2.0f);
        const auto first = attend(cache, q, nq, nk, s, nk - nq, 0, s.n_kv_heads);
        for (const int64_t page_rows : {int64_t{16}, int64_t{64}}) {
          for (const int64_t run : {int64_t{1}, int64_t{3}}) {
            EXPECT_TRUE(same_bits(attend(cache, q, nq, nk, s, nk - nq, page_rows, run), first))
                << storage_name(storage) << " nk=" << nk << " page_rows=" << page_rows
                << " heads per run=" << run;
          }
        }
      }
    }
  }
}

// The cache in head-major pages [kv heads][page_rows][head row] with `gap` poisoned units after
// each head row, run as decode_attention() runs it.
std::vector<float> attend_head_major(const Cache& c, const std::vector<float>& q, int64_t nq,
                                     int64_t nk, const AttentionShape& s, int64_t page_rows,
                                     int64_t gap, int64_t heads_per_run) {
  using testing::PageOrder;
  using testing::scatter_pages;
  const int64_t heads = s.n_kv_heads, d = s.head_dim, d8 = kv_q8_bytes(d);
  const auto units = testing::page_strides(PageOrder::kHeadMajor, page_rows, heads, d, gap);
  const auto bytes = testing::page_strides(PageOrder::kHeadMajor, page_rows, heads, d8, gap);
  testing::PagePool<float> k, v;
  testing::PagePool<uint16_t> k16, v16;
  testing::PagePool<int8_t> k8, v8;
  Problem p;
  p.kv.page_rows = page_rows;
  p.kv.row_stride = c.storage == Storage::kQ8 ? bytes.row : units.row;
  p.kv.head_stride = c.storage == Storage::kQ8 ? bytes.head : units.head;
  if (c.storage == Storage::kF16) {
    k16 = scatter_pages<uint16_t>(c.k16, nk, heads, d, page_rows, units, 0x7e00, 1);  // NaN
    v16 = scatter_pages<uint16_t>(c.v16, nk, heads, d, page_rows, units, 0x7e00, 2);
    p.kv.k16_pages = k16.pages.data();
    p.kv.v16_pages = v16.pages.data();
  } else if (c.storage == Storage::kQ8) {
    const auto poison = static_cast<int8_t>(0xff);  // NaN scales
    k8 = scatter_pages<int8_t>(c.k8, nk, heads, d8, page_rows, bytes, poison, 3);
    v8 = scatter_pages<int8_t>(c.v8, nk, heads, d8, page_rows, bytes, poison, 4);
    p.kv.k8_pages = k8.pages.data();
    p.kv.v8_pages = v8.pages.data();
  } else {
    k = scatter_pages<float>(c.k, nk, heads, d, page_rows, units, NAN, 5);
    v = scatter_pages<float>(c.v, nk, heads, d, page_rows, units, NAN, 6);
    p.kv.k_pages = k.pages.data();
    p.kv.v_pages = v.pages.data();
  }
  p.q = q.data();
  p.nq = nq;
  p.nk = nk;
  p.shape = s;
  p.causal_offset = nk - nq;
  return decode_on_model(p, heads_per_run);
}

TEST(DecodeAttentionAvx512Model, HeadMajorPagesChangeNoBit) {
  // Runs of several heads are read head by head over such pages: the same bits as the
  // contiguous cache.
  for (const AttentionShape s :
       {AttentionShape{16, 8, 128, 1.0f / std::sqrt(128.0f)}, AttentionShape{4, 2, 64, 0.125f}}) {
    for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
      for (const int64_t nk : {int64_t{40}, int64_t{300}}) {
        const Cache cache = make_cache(nk, s.n_kv_heads * s.head_dim, storage, 41);
        const int64_t nq = 1;
        const auto q = random_vector(static_cast<size_t>(nq * s.n_heads * s.head_dim), 42, 2.0f);
        const auto first = attend(cache, q, nq, nk, s, nk - nq, 0, s.n_kv_heads);
        for (const int64_t page_rows : {int64_t{16}, int64_t{128}}) {
          for (const int64_t gap : {int64_t{0}, int64_t{8}}) {
            for (const int64_t run : {int64_t{1}, int64_t{3}, s.n_kv_heads}) {
              EXPECT_TRUE(
                  same_bits(attend_head_major(cache, q, nq, nk, s, page_rows, gap, run), first))
                  << storage_name(storage) << " nk=" << nk << " page_rows=" << page_rows
                  << " gap=" << gap << " heads per run=" << run;
            }
          }
        }
      }
    }
  }
}

TEST(DecodeAttentionAvx512Model, EachRowAsIfAlone) {
  // Query i of a causal call sees keys [0, offset + i]: the same bits as that query alone over
  // those keys, for rows on both sides of a span boundary.
  const AttentionShape s{4, 2, 64, 0.125f};
  const int64_t d = 64, nq = 4;
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const int64_t nk : {int64_t{3} + nq, kDecodeSpan + 2, 2 * kDecodeSpan + 1}) {
      const Cache cache = make_cache(nk, 2 * d, storage, 31);
      const auto q = random_vector(static_cast<size_t>(nq * 4 * d), 32, 3.0f);
      const auto all = attend(cache, q, nq, nk, s, nk - nq, 16, 2);
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t seen = nk - nq + i + 1;
        const std::vector<float> qi(q.begin() + i * 4 * d, q.begin() + (i + 1) * 4 * d);
        const auto alone = attend(cache, qi, 1, seen, s, seen - 1, 16, 2);
        const std::vector<float> row(all.begin() + i * 4 * d, all.begin() + (i + 1) * 4 * d);
        EXPECT_TRUE(same_bits(row, alone)) << storage_name(storage) << " nk=" << nk << " row " << i;
      }
    }
  }
}

}  // namespace
}  // namespace qvl::ops
