// The NEON attention kernels against the scalar reference, directly (decode_span_neon under the
// decode driver) and through ops::attention at every NEON level: fp32, half and 8-bit K/V, whole
// and in shuffled pages (bit-identical), GQA groups of 1 to 8, head_dim odd in 16s, contexts below,
// at and past a span, and each query's bits the same attending alone (batch invariance).
#include "ops/arm/attention_neon.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ops/isa_test_util.h"
#include "ops/kv_cache_fixture.h"
#include "ops/attention.h"
#include "ops/attention_decode.h"
#include "ops/attention_kernels.h"
#include "ops/kv_q8.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using attention_kernels::kDecodeSpan;
using testing::Cache;
using testing::make_cache;
using testing::random_vector;
using testing::Storage;
using testing::storage_name;

constexpr float kTolerance = 1e-4f;  // the dispatch's self-check (agrees_with_reference)
constexpr int64_t kPageRows = 16;

struct Heads {
  int64_t n_heads, n_kv_heads, head_dim;
};

// The cache as pages of kPageRows positions stored in reverse order (a pool hands pages out in any
// order), and as one page; `kv(paged)` gives the PagedKV of either.
struct Pages {
  std::vector<float> k, v;
  std::vector<uint16_t> k16, v16;
  std::vector<int8_t> k8, v8;
  std::vector<const float*> kp, vp;
  std::vector<const uint16_t*> k16p, v16p;
  std::vector<const int8_t*> k8p, v8p;
  const float* k_whole = nullptr;
  const float* v_whole = nullptr;
  const uint16_t* k16_whole = nullptr;
  const uint16_t* v16_whole = nullptr;
  const int8_t* k8_whole = nullptr;
  const int8_t* v8_whole = nullptr;
  Storage storage;
  int64_t nk;

  PagedKV kv(bool paged) const {
    PagedKV kv;
    if (storage == Storage::kF16) {
      kv.k16_pages = paged ? k16p.data() : &k16_whole;
      kv.v16_pages = paged ? v16p.data() : &v16_whole;
    } else if (storage == Storage::kQ8) {
      kv.k8_pages = paged ? k8p.data() : &k8_whole;
      kv.v8_pages = paged ? v8p.data() : &v8_whole;
    } else {
      kv.k_pages = paged ? kp.data() : &k_whole;
      kv.v_pages = paged ? vp.data() : &v_whole;
    }
    kv.page_rows = paged ? kPageRows : (nk + kPageRows - 1) / kPageRows * kPageRows;
    return kv;
  }
};

template <typename T>
void reverse_pages(const std::vector<T>& rows, int64_t nk, int64_t row_units, std::vector<T>& pool,
                   std::vector<const T*>& pages) {
  const int64_t n_pages = (nk + kPageRows - 1) / kPageRows;
  const int64_t page_units = kPageRows * row_units;
  pool.assign(static_cast<size_t>(n_pages * page_units), T{});
  pages.resize(static_cast<size_t>(n_pages));
  for (int64_t x = 0; x < n_pages; ++x) {
    T* dst = pool.data() + (n_pages - 1 - x) * page_units;
    const int64_t count = std::min(kPageRows, nk - x * kPageRows) * row_units;
    std::copy(rows.begin() + x * page_units, rows.begin() + x * page_units + count, dst);
    pages[static_cast<size_t>(x)] = dst;
  }
}

Pages make_pages(const Cache& c, int64_t nk, int64_t row_elems) {
  Pages p;
  p.storage = c.storage;
  p.nk = nk;
  p.k_whole = c.k.data();
  p.v_whole = c.v.data();
  p.k16_whole = c.k16.data();
  p.v16_whole = c.v16.data();
  p.k8_whole = c.k8.data();
  p.v8_whole = c.v8.data();
  if (c.storage == Storage::kF16) {
    reverse_pages(c.k16, nk, row_elems, p.k16, p.k16p);
    reverse_pages(c.v16, nk, row_elems, p.v16, p.v16p);
  } else if (c.storage == Storage::kQ8) {
    reverse_pages(c.k8, nk, kv_q8_bytes(row_elems), p.k8, p.k8p);
    reverse_pages(c.v8, nk, kv_q8_bytes(row_elems), p.v8, p.v8p);
  } else {
    reverse_pages(c.k, nk, row_elems, p.k, p.kp);
    reverse_pages(c.v, nk, row_elems, p.v, p.vp);
  }
  return p;
}

// decode_span_neon under the decode driver (no dispatch).
std::vector<float> decode_direct(const PagedKV& kv, const float* q, int64_t nq, int64_t nk,
                                 const AttentionShape& s, int64_t causal_offset) {
  std::vector<float> out(static_cast<size_t>(nq * s.n_heads * s.head_dim),
                         std::numeric_limits<float>::quiet_NaN());
  attention_kernels::Problem p;
  p.q = q;
  p.kv = with_strides(kv, s);
  p.out = out.data();
  p.nq = nq;
  p.nk = nk;
  p.shape = s;
  p.causal_offset = causal_offset;
  attention_kernels::decode_attention(attention_kernels::decode_span_neon, p);
  return out;
}

float worst_error(const std::vector<float>& got, const std::vector<float>& want) {
  float worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::isfinite(got[i]) ? std::max(worst, std::fabs(got[i] - want[i])) : INFINITY;
  }
  return worst;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AttentionNeon, DecodeSpanMatchesReferenceWholeAndPaged) {
  uint32_t seed = 31;
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const Heads h :
         {Heads{4, 2, 64}, Heads{2, 2, 16}, Heads{8, 2, 48}, Heads{16, 2, 128}, Heads{3, 3, 96}}) {
      if (storage == Storage::kQ8 && h.head_dim % kKvQ8Block != 0) continue;
      const AttentionShape s{h.n_heads, h.n_kv_heads, h.head_dim,
                             1.0f / std::sqrt(static_cast<float>(h.head_dim))};
      const int64_t group = h.n_heads / h.n_kv_heads;
      for (const int64_t nk : {int64_t{1}, int64_t{9}, int64_t{31}, kDecodeSpan - 1, kDecodeSpan,
                               kDecodeSpan + 1, 2 * kDecodeSpan + 87}) {
        const Cache cache = make_cache(nk, h.n_kv_heads * h.head_dim, storage, seed++);
        const Pages pages = make_pages(cache, nk, h.n_kv_heads * h.head_dim);
        for (const int64_t nq : {int64_t{1}, int64_t{2}, int64_t{3}}) {
          if (nq > nk || nq * group > attention_kernels::kDecodeMaxRows) continue;
          for (const int64_t offset : {int64_t{-1}, nk - nq, nk / 3}) {
            const auto q =
                random_vector(static_cast<size_t>(nq * h.n_heads * h.head_dim), seed++, 2.0f);
            std::vector<float> want(q.size());
            attention_kernels::attention_reference(q.data(), nq, cache.k.data(), cache.v.data(), nk,
                                                   s, offset, want.data());
            const auto whole = decode_direct(pages.kv(false), q.data(), nq, nk, s, offset);
            const auto paged = decode_direct(pages.kv(true), q.data(), nq, nk, s, offset);
            const auto where = ::testing::Message()
                               << storage_name(storage) << " heads " << h.n_heads << "/"
                               << h.n_kv_heads << " d=" << h.head_dim << " nq=" << nq
                               << " nk=" << nk << " offset=" << offset;
            EXPECT_LE(worst_error(whole, want), kTolerance) << where;
            EXPECT_TRUE(same_bits(whole, paged)) << where << ": paged bits differ";
            if (offset < 0 || nq == 1) continue;
            // Batch invariance: each query attending alone (at its own causal offset).
            const int64_t row = h.n_heads * h.head_dim;
            for (int64_t i = 0; i < nq; ++i) {
              const auto alone =
                  decode_direct(pages.kv(true), q.data() + i * row, 1, nk, s, offset + i);
              EXPECT_TRUE(same_bits(alone, std::vector<float>(whole.begin() + i * row,
                                                              whole.begin() + (i + 1) * row)))
                  << where << ": query " << i << " alone differs";
            }
          }
        }
      }
    }
  }
}

// Restores the default global pool however the test ends.
struct GlobalThreads {
  explicit GlobalThreads(int n) { ThreadPool::set_global_threads(n); }
  ~GlobalThreads() { ThreadPool::set_global_threads(0); }
};

TEST(AttentionNeon, DecodeSpanThreadCountChangesNoBit) {
  const AttentionShape s{16, 8, 128, 1.0f / std::sqrt(128.0f)};  // Qwen3-VL 2B text attention
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    const int64_t nk = 1100;
    const Cache cache = make_cache(nk, 8 * 128, storage, 41);
    const Pages pages = make_pages(cache, nk, 8 * 128);
    const auto q = random_vector(static_cast<size_t>(16 * 128), 42, 2.0f);
    std::vector<float> first;
    for (const int threads : {1, 2, 3}) {
      GlobalThreads pool(threads);
      const auto got = decode_direct(pages.kv(true), q.data(), 1, nk, s, nk - 1);
      if (first.empty()) {
        first = got;
      } else {
        EXPECT_TRUE(same_bits(got, first))
            << storage_name(storage) << ": " << threads << " threads";
      }
    }
  }
}

class AttentionNeonDispatch : public ::testing::TestWithParam<IsaLevel> {
 protected:
  void SetUp() override {
    if (!testing::runs_level(GetParam())) {
      GTEST_SKIP() << "this CPU lacks " << isa_level_name(GetParam()) << ": skipped";
    }
    // A level failing its self-check silently runs a lower one, which would hide it here.
    ASSERT_TRUE(attention_kernels::kernels_verified(GetParam())) << isa_level_name(GetParam());
  }
};

// Decode-like (rows <= 8 per kv head) and many-row calls through ops::attention, whole and paged.
TEST_P(AttentionNeonDispatch, MatchesReferenceWholeAndPaged) {
  const IsaLevel isa = GetParam();
  uint32_t seed = 51;
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const Heads h : {Heads{4, 2, 64}, Heads{8, 2, 48}, Heads{16, 2, 128}}) {
      if (storage == Storage::kQ8 && h.head_dim % kKvQ8Block != 0) continue;
      const AttentionShape s{h.n_heads, h.n_kv_heads, h.head_dim,
                             1.0f / std::sqrt(static_cast<float>(h.head_dim))};
      for (const int64_t nk : {int64_t{7}, int64_t{150}, kDecodeSpan + 3}) {
        const Cache cache = make_cache(nk, h.n_kv_heads * h.head_dim, storage, seed++);
        const Pages pages = make_pages(cache, nk, h.n_kv_heads * h.head_dim);
        for (const int64_t nq : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{37}}) {
          if (nq > nk) continue;
          for (const int64_t offset : {int64_t{-1}, nk - nq}) {
            const auto q =
                random_vector(static_cast<size_t>(nq * h.n_heads * h.head_dim), seed++, 2.0f);
            std::vector<float> want(q.size()), whole(q.size()), paged(q.size());
            attention_kernels::attention_reference(q.data(), nq, cache.k.data(), cache.v.data(), nk,
                                                   s, offset, want.data());
            testing::IsaScope scope(isa);
            attention(q.data(), nq, pages.kv(false), nk, s, offset, whole.data());
            attention(q.data(), nq, pages.kv(true), nk, s, offset, paged.data());
            const auto where = ::testing::Message()
                               << isa_level_name(isa) << " " << storage_name(storage) << " heads "
                               << h.n_heads << "/" << h.n_kv_heads << " d=" << h.head_dim
                               << " nq=" << nq << " nk=" << nk << " offset=" << offset;
            EXPECT_LE(worst_error(whole, want), kTolerance) << where;
            EXPECT_TRUE(same_bits(whole, paged)) << where << ": paged bits differ";
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(NeonLevels, AttentionNeonDispatch,
                         ::testing::Values(IsaLevel::kNeon, IsaLevel::kNeonDotprod,
                                           IsaLevel::kNeonI8mm),
                         [](const auto& info) {
                           std::string name = isa_level_name(info.param);
                           std::erase_if(name, [](char ch) { return !std::isalnum(ch); });
                           return name;
                         });

}  // namespace
}  // namespace qvl::ops
