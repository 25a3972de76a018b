// ops::attention over a paged KV cache: bit-identical to the contiguous call on the same numbers
// for every page size, storage, ISA level and code path (direct K for decode, K panels for
// prefill), with pages scattered through a pool in shuffled order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "isa_test_util.h"
#include "kv_pages_fixture.h"
#include "ops/attention.h"
#include "ops/attention_kernels.h"
#include "ops/kv_q8.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using testing::IsaScope;
using testing::PageOrder;
using testing::random_vector;

struct Case {
  int64_t nq, nk, head_dim, n_heads, n_kv_heads, causal_offset;
};

enum class Storage { kF32, kF16, kQ8 };
const char* storage_name(Storage storage) {
  return storage == Storage::kF32 ? " fp32" : storage == Storage::kF16 ? " half" : " 8-bit";
}

// Runs the contiguous and the paged call at `isa` and returns how many outputs differ in any
// bit (NaN counts as a difference). Also checks the contiguous output against the reference.
// Pages are position-major (strides left 0) unless `order` or a `gap` of poisoned units after
// each head row asks for explicit strides.
int64_t paged_mismatches(const Case& c, int64_t page_rows, Storage storage, IsaLevel isa,
                         uint32_t seed, PageOrder order = PageOrder::kPositionMajor,
                         int64_t gap = 0) {
  const AttentionShape s{c.n_heads, c.n_kv_heads, c.head_dim,
                         1.0f / std::sqrt(static_cast<float>(c.head_dim))};
  const int64_t row_elems = c.n_kv_heads * c.head_dim;
  const auto q = random_vector(static_cast<size_t>(c.nq * c.n_heads * c.head_dim), seed, 3.0f);
  auto k = random_vector(static_cast<size_t>(c.nk * row_elems), seed + 1, 1.0f);
  auto v = random_vector(static_cast<size_t>(c.nk * row_elems), seed + 2, 1.0f);
  std::vector<uint16_t> k16(k.size()), v16(v.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k16[i] = kernels::f32_to_f16(k[i]);
    v16[i] = kernels::f32_to_f16(v[i]);
    k[i] = f16_to_f32(k16[i]);
    v[i] = f16_to_f32(v16[i]);
  }
  // 8-bit rows hold other numbers: the reference then runs on their dequantized values.
  const int64_t row_bytes = kv_q8_bytes(row_elems);
  std::vector<int8_t> k8(static_cast<size_t>(c.nk * row_bytes)), v8(k8.size());
  if (storage == Storage::kQ8) {
    for (int64_t j = 0; j < c.nk; ++j) {
      quantize_kv_q8(k.data() + j * row_elems, row_elems, k8.data() + j * row_bytes);
      quantize_kv_q8(v.data() + j * row_elems, row_elems, v8.data() + j * row_bytes);
    }
    dequantize_kv_q8(k8.data(), c.nk * row_elems, k.data());
    dequantize_kv_q8(v8.data(), c.nk * row_elems, v.data());
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const uint16_t nan16 = 0x7e00;
  const int64_t heads = c.n_kv_heads, d = c.head_dim, d8 = kv_q8_bytes(d);
  const auto units = testing::page_strides(order, page_rows, heads, d, gap);
  const auto bytes = testing::page_strides(order, page_rows, heads, d8, gap);
  using testing::scatter_pages;
  const auto k_pool = scatter_pages(k, c.nk, heads, d, page_rows, units, nan, seed + 3);
  const auto v_pool = scatter_pages(v, c.nk, heads, d, page_rows, units, nan, seed + 4);
  const auto k16_pool = scatter_pages(k16, c.nk, heads, d, page_rows, units, nan16, seed + 5);
  const auto v16_pool = scatter_pages(v16, c.nk, heads, d, page_rows, units, nan16, seed + 6);
  // All-ones bytes: code -1 and a NaN scale, so a stray 8-bit read shows too.
  const int8_t poison8 = -1;
  const auto k8_pool = scatter_pages(k8, c.nk, heads, d8, page_rows, bytes, poison8, seed + 7);
  const auto v8_pool = scatter_pages(v8, c.nk, heads, d8, page_rows, bytes, poison8, seed + 8);
  PagedKV kv;
  kv.page_rows = page_rows;
  if (order != PageOrder::kPositionMajor || gap != 0) {
    kv.row_stride = storage == Storage::kQ8 ? bytes.row : units.row;
    kv.head_stride = storage == Storage::kQ8 ? bytes.head : units.head;
  }
  if (storage == Storage::kF16) {
    kv.k16_pages = k16_pool.pages.data();
    kv.v16_pages = v16_pool.pages.data();
  } else if (storage == Storage::kQ8) {
    kv.k8_pages = k8_pool.pages.data();
    kv.v8_pages = v8_pool.pages.data();
  } else {
    kv.k_pages = k_pool.pages.data();
    kv.v_pages = v_pool.pages.data();
  }
  std::vector<float> want(q.size()), contiguous(q.size(), nan), paged(q.size(), nan);
  attention_kernels::attention_reference(q.data(), c.nq, k.data(), v.data(), c.nk, s,
                                         c.causal_offset, want.data());
  {
    IsaScope scope(isa);
    if (storage == Storage::kF16) {
      attention(q.data(), c.nq, k16.data(), v16.data(), c.nk, s, c.causal_offset,
                contiguous.data());
    } else if (storage == Storage::kQ8) {
      attention(q.data(), c.nq, k8.data(), v8.data(), c.nk, s, c.causal_offset, contiguous.data());
    } else {
      attention(q.data(), c.nq, k.data(), v.data(), c.nk, s, c.causal_offset, contiguous.data());
    }
    attention(q.data(), c.nq, kv, c.nk, s, c.causal_offset, paged.data());
  }
  int64_t mismatches = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_NEAR(contiguous[i], want[i], 2e-5f) << "contiguous output " << i;
    if (std::isnan(paged[i]) || std::memcmp(&paged[i], &contiguous[i], sizeof(float)) != 0) {
      ++mismatches;
    }
  }
  return mismatches;
}

class PagedAttention : public ::testing::TestWithParam<IsaLevel> {
 protected:
  void SetUp() override {
    if (!testing::runs_level(GetParam())) {
      GTEST_SKIP() << "this CPU lacks " << isa_level_name(GetParam()) << ": skipped";
    }
    // A level that fails its self-check silently runs a lower one: that would hide a broken
    // kernel from the comparisons below.
    ASSERT_TRUE(attention_kernels::kernels_verified(GetParam())) << isa_level_name(GetParam());
  }
};

TEST_P(PagedAttention, BitIdenticalToContiguousForEveryPageSize) {
  const IsaLevel isa = GetParam();
  uint32_t seed = 1;
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const int64_t page_rows : {16, 32, 48, 64, 128}) {
      // nk below one page, not a multiple of the page, and across several key blocks.
      for (const int64_t nk : {5, 16, 47, 130, 300}) {
        // Decode (1 query: direct K), a few queries (6 rows: direct K), prefill (K panels).
        for (const int64_t nq : {int64_t{1}, std::min<int64_t>(nk, 3), nk}) {
          for (const bool causal : {false, true}) {
            const Case c{nq, nk, 64, 4, 2, causal ? nk - nq : -1};
            EXPECT_EQ(paged_mismatches(c, page_rows, storage, isa, seed++), 0)
                << isa_level_name(isa) << storage_name(storage) << " page_rows=" << page_rows
                << " nq=" << nq << " nk=" << nk << " causal=" << causal;
          }
        }
      }
    }
  }
}

TEST_P(PagedAttention, ModelDecodeAndPrefillShapes) {
  // Qwen3-VL 2B text attention: 16 query heads on 8 kv heads of 128.
  const IsaLevel isa = GetParam();
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const int64_t page_rows : {16, 32, 64}) {
      for (const Case& c : {Case{1, 1000, 128, 16, 8, 999}, Case{1, 333, 128, 16, 8, -1},
                            Case{70, 70, 128, 16, 8, 0}, Case{9, 200, 128, 16, 8, 191}}) {
        EXPECT_EQ(paged_mismatches(c, page_rows, storage, isa, 77), 0)
            << isa_level_name(isa) << storage_name(storage) << " page_rows=" << page_rows
            << " nq=" << c.nq << " nk=" << c.nk;
      }
    }
  }
}

TEST_P(PagedAttention, HeadMajorAndStridedPagesChangeNoBit) {
  // Pages [kv heads][page_rows][head_dim] (a head's rows contiguous) and rows with poisoned gaps
  // between them: the same bits as the contiguous call, decode (runs of heads read head by head)
  // and prefill (K panels) alike.
  const IsaLevel isa = GetParam();
  uint32_t seed = 500;
  for (const Storage storage : {Storage::kF32, Storage::kF16, Storage::kQ8}) {
    for (const PageOrder order : {PageOrder::kHeadMajor, PageOrder::kPositionMajor}) {
      for (const int64_t gap : {int64_t{0}, int64_t{8}}) {
        if (order == PageOrder::kPositionMajor && gap == 0) continue;  // the tests above
        for (const int64_t page_rows : {16, 32, 128}) {
          for (const Case& c : {Case{1, 5, 64, 4, 2, 4}, Case{1, 300, 64, 4, 2, 299},
                                Case{3, 130, 64, 4, 2, 127}, Case{47, 47, 64, 4, 2, 0},
                                Case{1, 600, 128, 16, 8, 599}, Case{1, 333, 128, 16, 8, -1}}) {
            EXPECT_EQ(paged_mismatches(c, page_rows, storage, isa, seed++, order, gap), 0)
                << isa_level_name(isa) << storage_name(storage)
                << (order == PageOrder::kHeadMajor ? " head-major" : " position-major")
                << " gap=" << gap << " page_rows=" << page_rows << " nq=" << c.nq << " nk=" << c.nk;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, PagedAttention, ::testing::ValuesIn(arch_isa_levels()),
                         [](const auto& info) {
                           std::string name = isa_level_name(info.param);
                           std::erase_if(name, [](char ch) { return !std::isalnum(ch); });
                           return name;
                         });

TEST(PagedAttentionContract, PageRowsMustBeAMultipleOf16AndOneStorageSet) {
  const AttentionShape s{2, 1, 16, 0.25f};
  std::vector<float> q(2 * 16, 0.5f), rows(24 * 16, 0.25f), out(q.size());
  const float* pages[] = {rows.data()};
  PagedKV kv;
  kv.k_pages = pages;
  kv.v_pages = pages;
  kv.page_rows = 24;
  EXPECT_THROW(attention(q.data(), 1, kv, 20, s, -1, out.data()), Error);
  kv.page_rows = 32;
  EXPECT_NO_THROW(attention(q.data(), 1, kv, 20, s, -1, out.data()));
  const uint16_t* half_pages[] = {nullptr};
  kv.k16_pages = half_pages;
  EXPECT_THROW(attention(q.data(), 1, kv, 20, s, -1, out.data()), Error);
}

}  // namespace
}  // namespace qvl::ops
