// Decode attention (few rows per kv head: the span kernels of ops/attention_decode.h) at every ISA
// level: against the scalar reference for every storage over tail shapes (contexts of 1
// position, below, at and past a span, head_dim not a multiple of 32, GQA groups of 1, 2 and 4),
// and deterministic: bit-identical for any thread count, and each row bit-identical to the same
// query attending alone (batch invariance).
#include "ops/attention_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "isa_test_util.h"
#include "kv_cache_fixture.h"
#include "ops/attention.h"
#include "ops/attention_kernels.h"
#include "ops/kv_q8.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using attention_kernels::kDecodeSpan;
using testing::IsaScope;
using testing::random_vector;

using testing::Cache;
using testing::make_cache;
using testing::Storage;
using testing::storage_name;

// The dispatched attention over the cache's storage (at the active ISA level).
std::vector<float> attend(const Cache& c, const float* q, int64_t nq, int64_t nk,
                          const AttentionShape& s, int64_t causal_offset) {
  std::vector<float> out(static_cast<size_t>(nq * s.n_heads * s.head_dim),
                         std::numeric_limits<float>::quiet_NaN());
  if (c.storage == Storage::kF16) {
    attention(q, nq, c.k16.data(), c.v16.data(), nk, s, causal_offset, out.data());
  } else if (c.storage == Storage::kQ8) {
    attention(q, nq, c.k8.data(), c.v8.data(), nk, s, causal_offset, out.data());
  } else {
    attention(q, nq, c.k.data(), c.v.data(), nk, s, causal_offset, out.data());
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class DecodeAttention : public ::testing::TestWithParam<IsaLevel> {
 protected:
  void SetUp() override {
    if (!testing::runs_level(GetParam())) {
      GTEST_SKIP() << "this CPU lacks " << isa_level_name(GetParam()) << ": skipped";
    }
    // A level failing its self-check silently runs a lower one, which would hide it here.
    ASSERT_TRUE(attention_kernels::kernels_verified(GetParam())) << isa_level_name(GetParam());
  }
};

TEST_P(DecodeAttention, MatchesReferenceOnTailShapes) {
  const IsaLevel isa = GetParam();
  struct Heads {
    int64_t n_heads, n_kv_heads, head_dim;
  };
  uint32_t seed = 11;
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const Heads h : {Heads{4, 2, 64}, Heads{2, 2, 16}, Heads{8, 2, 48}, Heads{4, 1, 96}}) {
      if (storage == Storage::kQ8 && h.head_dim % kKvQ8Block != 0) continue;
      const AttentionShape s{h.n_heads, h.n_kv_heads, h.head_dim,
                             1.0f / std::sqrt(static_cast<float>(h.head_dim))};
      const int64_t group = h.n_heads / h.n_kv_heads;
      for (const int64_t nk : {int64_t{1}, int64_t{5}, kDecodeSpan - 1, kDecodeSpan,
                               kDecodeSpan + 1, 3 * kDecodeSpan - 70}) {
        const Cache cache = make_cache(nk, h.n_kv_heads * h.head_dim, storage, seed);
        for (const int64_t nq : {int64_t{1}, int64_t{2}, int64_t{4}}) {
          if (nq > nk || nq * group > attention_kernels::kDecodeMaxRows) continue;
          for (const bool causal : {true, false}) {
            for (const float sigma : {1.0f, 5.0f}) {  // 5: sharp softmax, large scores
              const auto q =
                  random_vector(static_cast<size_t>(nq * h.n_heads * h.head_dim), seed++, sigma);
              const int64_t offset = causal ? nk - nq : -1;
              std::vector<float> want(q.size());
              attention_kernels::attention_reference(q.data(), nq, cache.k.data(), cache.v.data(),
                                                     nk, s, offset, want.data());
              IsaScope scope(isa);
              const auto got = attend(cache, q.data(), nq, nk, s, offset);
              float worst = 0;
              for (size_t i = 0; i < got.size(); ++i) {
                worst =
                    std::isfinite(got[i]) ? std::max(worst, std::fabs(got[i] - want[i])) : INFINITY;
              }
              EXPECT_LE(worst, 2e-5f)
                  << isa_level_name(isa) << " " << storage_name(storage) << " heads " << h.n_heads
                  << "/" << h.n_kv_heads << " d=" << h.head_dim << " nq=" << nq << " nk=" << nk
                  << " causal=" << causal << " sigma=" << sigma;
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

TEST_P(DecodeAttention, ThreadCountChangesNoBit) {
  const IsaLevel isa = GetParam();
  // Qwen3-VL 2B text attention: 16 query heads on 8 kv heads of 128.
  const AttentionShape s{16, 8, 128, 1.0f / std::sqrt(128.0f)};
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const int64_t nk : {int64_t{40}, int64_t{1100}}) {
      const Cache cache = make_cache(nk, 8 * 128, storage, 21);
      for (const int64_t nq : {int64_t{1}, int64_t{3}}) {
        const auto q = random_vector(static_cast<size_t>(nq * 16 * 128), 22, 2.0f);
        IsaScope scope(isa);
        std::vector<float> first;
        for (const int threads : {1, 2, 3, 5}) {
          GlobalThreads pool(threads);
          const auto got = attend(cache, q.data(), nq, nk, s, nk - nq);
          if (first.empty()) {
            first = got;
          } else {
            EXPECT_TRUE(same_bits(got, first))
                << isa_level_name(isa) << " " << storage_name(storage) << " nk=" << nk
                << " nq=" << nq << ": " << threads << " threads differ from 1";
          }
        }
      }
    }
  }
}

TEST_P(DecodeAttention, EachRowAsIfAlone) {
  // Query i of a causal call sees keys [0, offset + i]: the same bits as that query alone over
  // those keys, for rows on both sides of a span boundary.
  const IsaLevel isa = GetParam();
  const AttentionShape s{4, 2, 64, 0.125f};
  const int64_t d = 64, nq = 4;
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const int64_t nk : {int64_t{3} + nq, kDecodeSpan + 2, 2 * kDecodeSpan + 1}) {
      const Cache cache = make_cache(nk, 2 * d, storage, 31);
      const auto q = random_vector(static_cast<size_t>(nq * 4 * d), 32, 3.0f);
      IsaScope scope(isa);
      const auto all = attend(cache, q.data(), nq, nk, s, nk - nq);
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t seen = nk - nq + i + 1;
        const auto alone = attend(cache, q.data() + i * 4 * d, 1, seen, s, seen - 1);
        const std::vector<float> row(all.begin() + i * 4 * d, all.begin() + (i + 1) * 4 * d);
        EXPECT_TRUE(same_bits(row, alone))
            << isa_level_name(isa) << " " << storage_name(storage) << " nk=" << nk << " row " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, DecodeAttention, ::testing::ValuesIn(arch_isa_levels()),
                         [](const auto& info) {
                           std::string name = isa_level_name(info.param);
                           std::erase_if(name, [](char ch) { return !std::isalnum(ch); });
                           return name;
                         });

}  // namespace
}  // namespace qvl::ops
