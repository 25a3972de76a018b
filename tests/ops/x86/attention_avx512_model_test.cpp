// The AVX-512 flash-attention task (attention_avx512_task.inc) compiled against the scalar model
// of the intrinsics (avx512_model*.inc), so it runs here without AVX-512. Driven as attention()
// drives it (K and V in panels, tasks of queries x one kv head, and runs of several kv heads), on
// tail shapes: key counts around the 16-key tile and the 128-key block, query rows not a multiple
// of the 4-row register block, causal and full masks, head_dim 16..128 (vision 64, text 128), GQA
// groups 1, 2 and 4. Checked against the scalar reference (attention_test.cpp's tolerance) and bit
// for bit against the AVX2 task: both compute each score, probability and output with the same
// operations in the same order (only their register blocking differs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/attention_kernels.h"
#include "ops/exp2_polynomial.h"
#include "ops/isa_test_util.h"
#include "ops/packed_matrix.h"
#include "ops/x86/attention_x86.h"

#ifdef _IMMINTRIN_H_INCLUDED
#error "the AVX-512 model below must not meet the real intrinsics (some are macros)"
#endif

namespace qvl::ops::attention_kernels::avx512_model {
namespace {
// In this order: the model, the vector math, the kernel.
#include "avx512_model.inc"
#include "avx512_model_float.inc"
// (keeps clang-format from sorting the fragments)
#include "ops/x86/elementwise_avx512_math.inc"
// (the kernel uses the math above)
#include "ops/x86/attention_avx512_task.inc"
// (after the fp32 task: shares its softmax)
#include "ops/x86/attention_bf16_avx512_task.inc"
}  // namespace

void task(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin, int64_t q_end,
          float* scratch) {
  flash_task<Avx512FlashKernels>(p, kvh_begin, kvh_end, q_begin, q_end, scratch);
}
void bf16_pairs(const Problem& p, int64_t kvh_begin, int64_t kvh_end, uint32_t* k_pairs,
                uint32_t* v_pairs) {
  bf16_pairs_from_panels(p, kvh_begin, kvh_end, k_pairs, v_pairs);
}
void task_bf16(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin, int64_t q_end,
               float* scratch) {
  flash_task<Avx512Bf16FlashKernels>(p, kvh_begin, kvh_end, q_begin, q_end, scratch);
}

}  // namespace qvl::ops::attention_kernels::avx512_model

namespace qvl::ops {
namespace {

using attention_kernels::kKeyTile;
using attention_kernels::Problem;
using testing::random_vector;

struct Case {
  int64_t nq, nk, head_dim, n_heads, n_kv_heads, causal_offset;
  float q_sigma;  // 6: scores of several tens, the running max rescales earlier sums
};

std::string describe(const Case& c) {
  return "nq=" + std::to_string(c.nq) + " nk=" + std::to_string(c.nk) +
         " d=" + std::to_string(c.head_dim) + " heads=" + std::to_string(c.n_heads) + "/" +
         std::to_string(c.n_kv_heads) + " causal=" + std::to_string(c.causal_offset) +
         " sigma=" + std::to_string(c.q_sigma);
}

// The inputs of one case and their panels (the layouts of attention_kernels.h).
struct Inputs {
  AttentionShape shape;
  std::vector<float> q, k, v, k_panels, v_panels;
};

Inputs make_inputs(const Case& c, uint32_t seed) {
  Inputs in;
  const int64_t d = c.head_dim, kvh = c.n_kv_heads;
  in.shape = {c.n_heads, kvh, d, 1.0f / std::sqrt(static_cast<float>(d))};
  in.q = random_vector(static_cast<size_t>(c.nq * c.n_heads * d), seed, c.q_sigma);
  in.k = random_vector(static_cast<size_t>(c.nk * kvh * d), seed + 1, 1.0f);
  in.v = random_vector(static_cast<size_t>(c.nk * kvh * d), seed + 2, 1.0f);
  const int64_t tiles = (c.nk + kKeyTile - 1) / kKeyTile;
  in.k_panels.assign(static_cast<size_t>(kvh * tiles * d * kKeyTile), 0.0f);  // padded keys: 0
  in.v_panels.assign(static_cast<size_t>(kvh * d * c.nk), 0.0f);
  for (int64_t h = 0; h < kvh; ++h) {
    for (int64_t j = 0; j < c.nk; ++j) {
      const float* krow = in.k.data() + (j * kvh + h) * d;
      const float* vrow = in.v.data() + (j * kvh + h) * d;
      for (int64_t x = 0; x < d; ++x) {
        in.k_panels[static_cast<size_t>(((h * tiles + j / kKeyTile) * d + x) * kKeyTile +
                                        j % kKeyTile)] = krow[x];
        in.v_panels[static_cast<size_t>(
            ((h * (d / kKeyTile) + x / kKeyTile) * c.nk + j) * kKeyTile + x % kKeyTile)] = vrow[x];
      }
    }
  }
  return in;
}

using TaskFn = void (*)(const Problem&, int64_t, int64_t, int64_t, int64_t, float*);

// All of out with `task`, queries in blocks of `block` and kv heads in runs of `run` (attention()
// uses about 64 rows per task and runs of 1; decode-like calls ran runs of several heads).
std::vector<float> run_tasks(const Case& c, const Inputs& in, TaskFn task, int64_t block,
                             int64_t run) {
  Problem p;
  p.q = in.q.data();
  p.k_panels = in.k_panels.data();
  p.v_panels = in.v_panels.data();
  std::vector<float> out(in.q.size(), NAN);
  p.out = out.data();
  p.nq = c.nq;
  p.nk = c.nk;
  p.shape = in.shape;
  p.causal_offset = c.causal_offset;
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t floats = attention_kernels::task_scratch_floats(block * group, c.head_dim, run);
  for (int64_t q0 = 0; q0 < c.nq; q0 += block) {
    for (int64_t h0 = 0; h0 < c.n_kv_heads; h0 += run) {
      // Scratch poisoned with NaN: a kernel reading what it did not write shows.
      std::vector<float> scratch(static_cast<size_t>(floats), NAN);
      task(p, h0, std::min(c.n_kv_heads, h0 + run), q0, std::min(c.nq, q0 + block), scratch.data());
    }
  }
  return out;
}

float max_error(const std::vector<float>& got, const std::vector<float>& want) {
  float worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  }
  return worst;
}

bool cpu_has_avx2() {
  return static_cast<int>(best_isa()) >= static_cast<int>(IsaLevel::kAvx2);
}

void check(const Case& c, uint32_t seed, int64_t block, int64_t run) {
  const Inputs in = make_inputs(c, seed);
  std::vector<float> want(in.q.size());
  attention_kernels::attention_reference(in.q.data(), c.nq, in.k.data(), in.v.data(), c.nk,
                                         in.shape, c.causal_offset, want.data());
  const auto got = run_tasks(c, in, attention_kernels::avx512_model::task, block, run);
  const std::string where =
      describe(c) + " block=" + std::to_string(block) + " run=" + std::to_string(run);
  EXPECT_LE(max_error(got, want), 2e-5f) << where;
  if (cpu_has_avx2()) {
    const auto avx2 = run_tasks(c, in, attention_kernels::task_avx2, block, run);
    EXPECT_EQ(std::memcmp(got.data(), avx2.data(), got.size() * sizeof(float)), 0)
        << "not the AVX2 task's bits: " << where;
  }
}

using PairsFn = void (*)(const Problem&, int64_t, int64_t, uint32_t*, uint32_t*);

// run_tasks for the bf16 task: the panels turned into pairs by `pairs` (per kv head, poisoned
// with NaN words first: every word the task reads must have been written).
std::vector<float> run_bf16_tasks(const Case& c, const Inputs& in, PairsFn pairs, TaskFn task,
                                  int64_t block) {
  const int64_t d = c.head_dim, tiles = (c.nk + kKeyTile - 1) / kKeyTile;
  std::vector<uint32_t> k_pairs(static_cast<size_t>(c.n_kv_heads * tiles * d * kKeyTile / 2),
                                0x7fc07fc0u);
  std::vector<uint32_t> v_pairs(static_cast<size_t>(c.n_kv_heads * d * ((c.nk + 1) / 2)),
                                0x7fc07fc0u);
  Problem p;
  p.q = in.q.data();
  p.k_panels = in.k_panels.data();
  p.v_panels = in.v_panels.data();
  p.nq = c.nq;
  p.nk = c.nk;
  p.shape = in.shape;
  p.causal_offset = c.causal_offset;
  for (int64_t h = 0; h < c.n_kv_heads; ++h) pairs(p, h, h + 1, k_pairs.data(), v_pairs.data());
  p.k_pairs = k_pairs.data();
  p.v_pairs = v_pairs.data();
  std::vector<float> out(in.q.size(), NAN);
  p.out = out.data();
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t floats = attention_kernels::task_scratch_floats(block * group, d, 1);
  for (int64_t q0 = 0; q0 < c.nq; q0 += block) {
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {
      std::vector<float> scratch(static_cast<size_t>(floats), NAN);
      task(p, h, h + 1, q0, std::min(c.nq, q0 + block), scratch.data());
    }
  }
  return out;
}

// The bf16 task against the fp32 reference: its rounding of q, k, p and v to bf16 moves outputs
// (values ~N(0, 1), scores ~1) by ~1e-3, a layout slip by ~1. On AVX-512 BF16 hosts the real
// kernel also runs: it must agree with the model up to vdpbf16ps's undocumented inner rounding.
void check_bf16(const Case& c, uint32_t seed, int64_t block) {
  const Inputs in = make_inputs(c, seed);
  std::vector<float> want(in.q.size());
  attention_kernels::attention_reference(in.q.data(), c.nq, in.k.data(), in.v.data(), c.nk,
                                         in.shape, c.causal_offset, want.data());
  const auto got = run_bf16_tasks(c, in, attention_kernels::avx512_model::bf16_pairs,
                                  attention_kernels::avx512_model::task_bf16, block);
  const std::string where = describe(c) + " block=" + std::to_string(block);
  EXPECT_LE(max_error(got, want), 2e-2f) << where;
  if (best_isa() == IsaLevel::kAvx512) {
    const auto real = run_bf16_tasks(c, in, attention_kernels::bf16_pairs_avx512,
                                     attention_kernels::task_bf16_avx512, block);
    EXPECT_LE(max_error(real, got), 1e-5f) << "real vs model: " << where;
  }
}

TEST(AttentionAvx512Model, Bf16ProductsFollowTheReferenceOnTailShapes) {
  uint32_t seed = 3000;
  // Odd and even key counts (the last key pair half empty), around the tile and the block.
  for (int64_t head_dim : {16, 48, 64, 128}) {
    for (int64_t group : {1, 2}) {
      for (int64_t n : {1, 3, 16, 17, 127, 129, 160}) {
        for (int64_t offset : {int64_t{-1}, int64_t{0}, int64_t{5}}) {
          const int64_t nq = offset < 0 ? n : std::max<int64_t>(1, n / 3);
          const int64_t causal = offset < 0 ? -1 : offset + (n - nq);
          const Case c{nq, n, head_dim, 2 * group, 2, causal, 1.0f};
          check_bf16(c, seed++, std::max<int64_t>(1, 64 / group));
          if (n == 129) check_bf16(c, seed++, 5);  // tasks starting past query 0, 1 live row
        }
      }
    }
  }
}

// Every (head_dim, GQA group, causal offset, key count) combination; self-attention (nq == nk)
// and a few queries against a longer history.
void check_tail_shapes(std::initializer_list<int64_t> head_dims,
                       std::initializer_list<int64_t> offsets, std::initializer_list<int64_t> ns,
                       uint32_t seed) {
  for (int64_t head_dim : head_dims) {
    for (int64_t group : {1, 2, 4}) {
      for (int64_t offset : offsets) {
        for (int64_t n : ns) {
          for (int64_t nq : {n, std::max<int64_t>(1, n / 8)}) {
            const int64_t causal = offset < 0 ? -1 : offset + (n - nq);
            const float sigma = seed % 2 ? 1.0f : 6.0f;
            const Case c{nq, n, head_dim, 2 * group, 2, causal, sigma};
            check(c, seed++, std::max<int64_t>(1, 64 / group), 1);
          }
        }
      }
    }
  }
}

TEST(AttentionAvx512Model, MatchesReferenceAndAvx2AtTheModelsHeadDims) {
  // Vision 64, text 128: keys within a tile, past it, at and past the 128-key block.
  check_tail_shapes({64, 128}, {-1, 5}, {1, 17, 127, 129, 160}, 1);
}

TEST(AttentionAvx512Model, MatchesReferenceAndAvx2AtOtherHeadDims) {
  // 16, 48 and 80: value chunks of 1, 3 and 4 + 1 panels.
  check_tail_shapes({16, 48, 80}, {-1, 0}, {1, 3, 16, 17, 129}, 1000);
}

TEST(AttentionAvx512Model, TaskShapesAndHeadRuns) {
  // Blocks of queries whose rows leave 1, 2 and 3 live rows in the last register block, tasks
  // starting past query 0, runs of several kv heads, and the vision and text shapes of the model.
  const Case cases[] = {{40, 300, 64, 4, 2, -1, 7.0f},    {33, 33, 64, 16, 16, -1, 1.0f},
                        {21, 150, 128, 16, 8, 129, 2.0f}, {7, 256, 128, 16, 8, 249, 1.0f},
                        {5, 33, 64, 2, 1, 100, 1.0f},     {13, 140, 16, 12, 3, 127, 5.0f}};
  uint32_t seed = 500;
  for (const Case& c : cases) {
    for (int64_t block : {int64_t{1}, int64_t{3}, int64_t{5}, int64_t{16}}) {
      for (int64_t run : {int64_t{1}, int64_t{2}}) check(c, seed++, block, run);
    }
  }
}

TEST(AttentionAvx512Model, KeysARowDoesNotSeeGetExactlyZeroWeight) {
  // Causal: key `far` holds values near the float maximum; rows before it share its tiles with
  // rows that see it, and must give it weight 0, not 2^-125 (which would show as ~2 here).
  const Case c{60, 60, 64, 4, 2, 0, 1.0f};
  for (int64_t far : {3, 5, 20, 47}) {
    Inputs in = make_inputs(c, 21);
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t x = 0; x < 64; ++x) {
        in.v[static_cast<size_t>((far * 2 + h) * 64 + x)] = 1e38f;
        in.v_panels[static_cast<size_t>(((h * 4 + x / 16) * 60 + far) * 16 + x % 16)] = 1e38f;
      }
    }
    std::vector<float> want(in.q.size());
    attention_kernels::attention_reference(in.q.data(), c.nq, in.k.data(), in.v.data(), c.nk,
                                           in.shape, 0, want.data());
    const auto got = run_tasks(c, in, attention_kernels::avx512_model::task, 16, 1);
    for (size_t i = 0; i < static_cast<size_t>(far * 4 * 64); ++i) {  // queries before `far`
      ASSERT_LE(std::fabs(got[i] - want[i]), 2e-5f) << "far=" << far << " at " << i;
    }
  }
}

}  // namespace
}  // namespace qvl::ops
