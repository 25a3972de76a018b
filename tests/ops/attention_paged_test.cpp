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
#include "ops/attention.h"
#include "ops/attention_kernels.h"
#include "ops/kv_q8.h"
#include "ops/packed_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

using testing::IsaScope;
using testing::random_vector;

// Rows [nk, row_elems] copied into pages of page_rows rows that sit in a pool in shuffled
// order, with spare slots and unused tail rows filled with NaN: a kernel reading a row it
// should not turns the output into NaN.
template <typename T>
struct Pool {
  std::vector<T> storage;
  std::vector<const T*> pages;
};

template <typename T>
Pool<T> scatter_into_pages(const std::vector<T>& rows, int64_t nk, int64_t row_elems,
                           int64_t page_rows, T poison, uint32_t seed) {
  const int64_t n_pages = (nk + page_rows - 1) / page_rows;
  const int64_t slots = n_pages + 2;
  const int64_t page_elems = page_rows * row_elems;
  Pool<T> pool;
  pool.storage.assign(static_cast<size_t>(slots * page_elems), poison);
  std::vector<int64_t> slot(static_cast<size_t>(slots));
  for (int64_t i = 0; i < slots; ++i) slot[static_cast<size_t>(i)] = i;
  std::shuffle(slot.begin(), slot.end(), std::mt19937(seed));
  for (int64_t x = 0; x < n_pages; ++x) {
    T* dst = pool.storage.data() + slot[static_cast<size_t>(x)] * page_elems;
    const int64_t count = std::min(page_rows, nk - x * page_rows) * row_elems;
    std::copy(rows.begin() + x * page_elems, rows.begin() + x * page_elems + count, dst);
    pool.pages.push_back(dst);
  }
  return pool;
}

struct Case {
  int64_t nq, nk, head_dim, n_heads, n_kv_heads, causal_offset;
};

enum class Storage { kF32, kF16, kQ8 };
const char* storage_name(Storage storage) {
  return storage == Storage::kF32 ? " fp32" : storage == Storage::kF16 ? " half" : " 8-bit";
}

// Runs the contiguous and the paged call at `isa` and returns how many outputs differ in any
// bit (NaN counts as a difference). Also checks the contiguous output against the reference.
int64_t paged_mismatches(const Case& c, int64_t page_rows, Storage storage, IsaLevel isa,
                         uint32_t seed) {
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
  const auto k_pool = scatter_into_pages(k, c.nk, row_elems, page_rows, nan, seed + 3);
  const auto v_pool = scatter_into_pages(v, c.nk, row_elems, page_rows, nan, seed + 4);
  const auto k16_pool = scatter_into_pages(k16, c.nk, row_elems, page_rows, nan16, seed + 5);
  const auto v16_pool = scatter_into_pages(v16, c.nk, row_elems, page_rows, nan16, seed + 6);
  // All-ones bytes: code -1 and a NaN scale, so a stray 8-bit read shows too.
  const int8_t poison8 = -1;
  const auto k8_pool = scatter_into_pages(k8, c.nk, row_bytes, page_rows, poison8, seed + 7);
  const auto v8_pool = scatter_into_pages(v8, c.nk, row_bytes, page_rows, poison8, seed + 8);
  PagedKV kv;
  kv.page_rows = page_rows;
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
    if (static_cast<int>(GetParam()) > static_cast<int>(best_isa())) {
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

INSTANTIATE_TEST_SUITE_P(EveryIsa, PagedAttention,
                         ::testing::Values(IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512),
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
