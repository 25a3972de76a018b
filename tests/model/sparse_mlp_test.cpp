// The mixture-of-experts MLP (model/sparse_mlp.h): routing as transformers computes it, the
// grouped computation against a token-by-token reference, batch invariance in every weight type,
// and fused checkpoints split into per-expert matrices (model/fused_experts.h).
#include "model/sparse_mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "base/half.h"
#include "model/fused_experts.h"
#include "model/safetensors.h"
#include "ops/activation.h"
#include "ops/packed_matrix.h"

namespace qvl {
namespace {

TEST(SparseMlpRouting, SoftmaxTopKAndNormalisation) {
  const float logits[6] = {0.5f, 2.0f, -1.0f, 1.0f, 2.0f, 0.0f};
  ExpertChoice c;
  route_token(logits, 6, 3, c);
  // 2.0 twice: the lower index first; then 1.0.
  EXPECT_EQ(c.experts, (std::vector<int32_t>{1, 4, 3}));
  double p[6], sum = 0;
  for (int e = 0; e < 6; ++e) sum += p[e] = std::exp(static_cast<double>(logits[e]));
  const double chosen = (p[1] + p[4] + p[3]) / sum;
  EXPECT_NEAR(c.weights[0], p[1] / sum / chosen, 1e-6);
  EXPECT_NEAR(c.weights[1], p[4] / sum / chosen, 1e-6);
  EXPECT_NEAR(c.weights[2], p[3] / sum / chosen, 1e-6);
  route_token(logits, 6, 1, c);
  EXPECT_EQ(c.experts, (std::vector<int32_t>{1}));
  EXPECT_EQ(c.weights, (std::vector<float>{1.0f}));
}

struct Experts {
  std::vector<std::vector<float>> values;  // router, then gate/up/down of each expert
  SparseMlpWeights weights;
};

// Random experts of the given shape, packed as `type` (the router as the loader would).
Experts random_experts(int64_t num_experts, int64_t hidden, int64_t ff, ops::QuantType type,
                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Experts x;
  x.values.reserve(static_cast<size_t>(1 + 3 * num_experts));
  const auto matrix = [&](int64_t rows, int64_t cols, float scale, ops::QuantType t) {
    std::vector<float>& v = x.values.emplace_back(static_cast<size_t>(rows * cols));
    for (float& f : v) f = scale * dist(rng);
    return ops::PackedMatrix::pack(ops::WeightRef{ops::WeightType::kF32, v.data(), rows, cols}, t);
  };
  x.weights.router = matrix(num_experts, hidden, 0.5f, sparse_router_type(type));
  for (int64_t e = 0; e < num_experts; ++e) {
    ExpertWeights w;
    w.gate_proj = matrix(ff, hidden, 0.1f, type);
    w.up_proj = matrix(ff, hidden, 0.1f, type);
    w.down_proj = matrix(hidden, ff, 0.1f, type);
    x.weights.experts.push_back(std::move(w));
  }
  return x;
}

std::vector<float> random_rows(int64_t n, int64_t hidden, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * hidden));
  for (float& v : x) v = dist(rng);
  return x;
}

// One token at a time, plainly: every chosen expert's MLP in double, summed best first.
std::vector<float> reference(const Experts& x, int64_t top_k, const float* in, int64_t hidden,
                             int64_t ff) {
  const auto num_experts = static_cast<int64_t>(x.weights.experts.size());
  std::vector<float> logits(static_cast<size_t>(num_experts));
  for (int64_t e = 0; e < num_experts; ++e) {
    double dot = 0;
    for (int64_t c = 0; c < hidden; ++c) dot += double{x.values[0][e * hidden + c]} * in[c];
    logits[e] = static_cast<float>(dot);
  }
  ExpertChoice choice;
  route_token(logits.data(), num_experts, top_k, choice);
  std::vector<double> y(static_cast<size_t>(hidden), 0.0);
  for (size_t j = 0; j < choice.experts.size(); ++j) {
    const int64_t e = choice.experts[j];
    const std::vector<float>&gate = x.values[1 + 3 * e], &up = x.values[2 + 3 * e],
          &down = x.values[3 + 3 * e];
    std::vector<double> act(static_cast<size_t>(ff));
    for (int64_t f = 0; f < ff; ++f) {
      double g = 0, u = 0;
      for (int64_t c = 0; c < hidden; ++c) {
        g += double{gate[f * hidden + c]} * in[c];
        u += double{up[f * hidden + c]} * in[c];
      }
      act[f] = g / (1.0 + std::exp(-g)) * u;
    }
    for (int64_t c = 0; c < hidden; ++c) {
      double d = 0;
      for (int64_t f = 0; f < ff; ++f) d += double{down[c * ff + f]} * act[f];
      y[c] += choice.weights[j] * d;
    }
  }
  return std::vector<float>(y.begin(), y.end());
}

TEST(SparseMlp, ExactGroupedComputationEqualsTokenByToken) {
  // 96 columns of hidden (3 blocks), an FFN of 40 (a partial tile), 8 experts, 2 or 3 active.
  const int64_t hidden = 96, ff = 40, n = 37;
  const Experts x = random_experts(8, hidden, ff, ops::QuantType::kExact, 1);
  const std::vector<float> in = random_rows(n, hidden, 2);
  for (int64_t top_k : {2, 3}) {
    SparseMlp mlp;
    std::vector<float> y(in.size());
    mlp.forward(x.weights, top_k, in.data(), n, y.data());
    std::vector<int> used(8, 0);
    for (int32_t e : mlp.last_experts()) used[e] = 1;
    EXPECT_GE(std::count(used.begin(), used.end(), 1), 6) << "the rows should spread";
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<float> want = reference(x, top_k, in.data() + i * hidden, hidden, ff);
      for (int64_t c = 0; c < hidden; ++c) {
        ASSERT_NEAR(y[i * hidden + c], want[c], 1e-4f * (1.0f + std::fabs(want[c])))
            << "row " << i << " column " << c << " top_k " << top_k;
      }
    }
  }
}

TEST(SparseMlp, ARowsBitsDoNotDependOnTheOtherRows) {
  // Decode batches (up to 15 rows share each expert's products) and prompt chunks (many rows).
  const int64_t hidden = 64, ff = 96, n = 40;
  for (ops::QuantType type : {ops::QuantType::kExact, ops::QuantType::kBF16,
                              ops::QuantType::kQ8Strips, ops::QuantType::kQ4Strips}) {
    SCOPED_TRACE(ops::quant_type_name(type));
    const Experts x = random_experts(16, hidden, ff, type, 3);
    const std::vector<float> in = random_rows(n, hidden, 4);
    SparseMlp mlp;
    std::vector<float> alone(in.size()), together(in.size());
    for (int64_t i = 0; i < n; ++i) {
      mlp.forward(x.weights, 4, in.data() + i * hidden, 1, alone.data() + i * hidden);
    }
    for (int64_t rows : {15, 40}) {
      mlp.forward(x.weights, 4, in.data(), rows, together.data());
      if (type == ops::QuantType::kExact || type == ops::QuantType::kBF16) {
        // The fp32 and bf16 GEMMs (16 rows and up) sum in another order than the GEMV: close,
        // not equal (the decoder gives prompt chunks their own products for that reason).
        for (int64_t i = 0; i < rows * hidden; ++i) {
          ASSERT_NEAR(together[i], alone[i], 1e-4f * (1.0f + std::fabs(alone[i]))) << i;
        }
        continue;
      }
      EXPECT_EQ(std::memcmp(together.data(), alone.data(), sizeof(float) * rows * hidden), 0)
          << rows << " rows";
    }
    // Below 16 rows every type's products are batch invariant.
    mlp.forward(x.weights, 4, in.data(), 15, together.data());
    EXPECT_EQ(std::memcmp(together.data(), alone.data(), sizeof(float) * 15 * hidden), 0);
  }
}

TEST(FusedExperts, SplitIntoPerExpertMatricesAsTransformersSlicesThem) {
  TextConfig c;
  c.num_layers = 2;
  c.hidden_size = 3;
  c.num_experts = 2;
  c.num_experts_per_tok = 1;
  c.moe_intermediate_size = 2;
  c.mlp_only_layers = {1};
  // gate_up [E=2, hidden=3, 2 * ff=4] and down [E=2, ff=2, hidden=3] with value = their index.
  std::vector<uint16_t> gate_up(24), down(12);
  for (size_t i = 0; i < gate_up.size(); ++i) gate_up[i] = f32_to_bf16(static_cast<float>(i));
  for (size_t i = 0; i < down.size(); ++i) down[i] = f32_to_bf16(static_cast<float>(100 + i));
  const std::string p = "model.language_model.layers.0.mlp.experts.";
  std::vector<TensorView> views = {{p + "gate_up_proj",
                                    "test",
                                    DType::kBF16,
                                    {2, 3, 4},
                                    reinterpret_cast<const uint8_t*>(gate_up.data()),
                                    48},
                                   {p + "down_proj",
                                    "test",
                                    DType::kBF16,
                                    {2, 2, 3},
                                    reinterpret_cast<const uint8_t*>(down.data()),
                                    24}};
  WeightStore store = WeightStore::from_views(views, nullptr, "test");
  EXPECT_FALSE(split_fused_layer(c, store, 1)) << "layer 1 is dense";
  const std::optional<SplitExperts> split = split_fused_layer(c, store, 0);
  ASSERT_TRUE(split);
  const WeightStore eager = WeightStore::from_views(split->views, split->bytes, "split");
  // The packer's split makes each matrix on demand, with the same values.
  std::map<std::string, std::function<void()>> fills = split_fused_experts_lazily(c, store);
  EXPECT_FALSE(store.has(p + "gate_up_proj"));
  EXPECT_EQ(fills.size(), 6u);
  for (auto& [name, make] : fills) {
    make();
    EXPECT_EQ(store.get(name).to_f32(), eager.get(name).to_f32()) << name;
    EXPECT_EQ(store.get(name).shape, eager.get(name).shape) << name;
  }
  const auto values = [&](const std::string& name) { return eager.get(name).to_f32(); };
  // gate_proj of expert 1 [ff, hidden]: row f = column f of gate_up[1] (x * W layout).
  EXPECT_EQ(values(p + "1.gate_proj.weight"), (std::vector<float>{12, 16, 20, 13, 17, 21}));
  EXPECT_EQ(values(p + "1.up_proj.weight"), (std::vector<float>{14, 18, 22, 15, 19, 23}));
  // down_proj of expert 0 [hidden, ff] = down[0]^T.
  EXPECT_EQ(values(p + "0.down_proj.weight"), (std::vector<float>{100, 103, 101, 104, 102, 105}));
  EXPECT_EQ(eager.get(p + "0.gate_proj.weight").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(eager.get(p + "0.down_proj.weight").shape, (std::vector<int64_t>{3, 2}));
}

}  // namespace
}  // namespace qvl
