// Chunking invariance of the prefill: one prompt (text, an image's 2-D positions, DeepStack
// features) prefilled whole or in chunks of any size of 16 rows or more — alone or after decode
// rows of other sequences in the same forward — gives byte-identical hidden states, logits and KV
// cache, for every weight type and KV type. The scheduler relies on this to cut prompts into
// smaller chunks while other sequences decode (engine/prefill_plan.h) without changing answers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/text_decoder.h"
#include "ops/packed_matrix.h"

namespace qvl {
namespace {

// Small enough to run in milliseconds, shaped like the real model where the kernels care:
// head_dim 64 (8-bit KV blocks), grouped heads, depths of several int8 chunks with a tail.
TextConfig small_config() {
  TextConfig c;
  c.vocab_size = 384;
  c.hidden_size = 320;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.intermediate_size = 704;
  c.max_position_embeddings = 4096;
  c.rope_theta = 5e6;
  c.mrope_section = {12, 10, 10};
  c.hidden_act = "silu";
  return c;
}

struct RandomModel {
  std::vector<std::vector<float>> storage;  // fp32 sources (kExact packs view them)
  TextWeights weights;
};

void build(RandomModel& m, const TextConfig& c, ops::QuantType type) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto matrix = [&](int64_t rows, int64_t cols, float scale) {
    std::vector<float>& v = m.storage.emplace_back(static_cast<size_t>(rows * cols));
    for (float& x : v) x = scale * normal(rng);
    return ops::WeightRef{ops::WeightType::kF32, v.data(), rows, cols};
  };
  auto norm = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = 1.0f + 0.1f * normal(rng);
    return v;
  };
  const int64_t h = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  const int64_t ff = c.intermediate_size;
  m.storage.reserve(64);
  m.weights.embed_tokens = matrix(c.vocab_size, h, 1.0f);
  m.weights.tied_lm_head = true;
  m.weights.lm_head = ops::PackedMatrix::pack(m.weights.embed_tokens, type);
  m.weights.final_norm = norm(h);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    TextLayerWeights w;
    const float in_scale = 1.0f / std::sqrt(static_cast<float>(h));
    w.q_proj = ops::PackedMatrix::pack(matrix(q, h, in_scale), type);
    w.k_proj = ops::PackedMatrix::pack(matrix(kv, h, in_scale), type);
    w.v_proj = ops::PackedMatrix::pack(matrix(kv, h, in_scale), type);
    w.o_proj = ops::PackedMatrix::pack(matrix(h, q, 1.0f / std::sqrt(static_cast<float>(q))), type);
    w.gate_proj = ops::PackedMatrix::pack(matrix(ff, h, in_scale), type);
    w.up_proj = ops::PackedMatrix::pack(matrix(ff, h, in_scale), type);
    w.down_proj =
        ops::PackedMatrix::pack(matrix(h, ff, 1.0f / std::sqrt(static_cast<float>(ff))), type);
    w.input_norm = norm(h);
    w.post_attention_norm = norm(h);
    w.q_norm = norm(c.head_dim);
    w.k_norm = norm(c.head_dim);
    m.weights.layers.push_back(std::move(w));
  }
}

// A prompt of n rows: 12 text positions, an image of 10 x 14 merged patches (t fixed, h and w
// follow the grid) with DeepStack features for layers 0..1, then text again.
struct Prompt {
  int64_t n = 0;
  std::vector<float> x;
  std::vector<int64_t> positions;  // [3, n]
  std::vector<int64_t> image_rows;
  std::vector<std::vector<float>> deepstack;  // per layer [image_rows, hidden]
};

Prompt make_prompt(const TextConfig& c, int64_t n) {
  constexpr int64_t kText = 12, kGridH = 10, kGridW = 14;
  Prompt p;
  p.n = n;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  p.x.resize(static_cast<size_t>(n * c.hidden_size));
  for (float& v : p.x) v = normal(rng);
  p.positions.resize(static_cast<size_t>(3 * n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t t = i, hh = i, ww = i;
    if (i >= kText && i < kText + kGridH * kGridW) {
      const int64_t patch = i - kText;
      t = kText;
      hh = kText + patch / kGridW;
      ww = kText + patch % kGridW;
      p.image_rows.push_back(i);
    } else if (i >= kText + kGridH * kGridW) {
      t = hh = ww = i - kGridH * kGridW + std::max(kGridH, kGridW);
    }
    p.positions[static_cast<size_t>(i)] = t;
    p.positions[static_cast<size_t>(n + i)] = hh;
    p.positions[static_cast<size_t>(2 * n + i)] = ww;
  }
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<float>& f = p.deepstack.emplace_back(p.image_rows.size() * c.hidden_size);
    for (float& v : f) v = 0.5f * normal(rng);
  }
  return p;
}

struct Prefilled {
  std::vector<float> hidden, logits;  // hidden of every row; logits of the last row
  std::vector<uint8_t> kv;            // every layer's keys and values, as stored
};

std::vector<uint8_t> kv_bytes(const KVCache& cache, int64_t layers) {
  const size_t bytes =
      kv_position_bytes(cache.type(), cache.kv_width()) * static_cast<size_t>(cache.length());
  std::vector<uint8_t> out;
  auto append = [&](const void* data) {
    const auto* b = static_cast<const uint8_t*>(data);
    out.insert(out.end(), b, b + bytes);
  };
  for (int64_t l = 0; l < layers; ++l) {
    switch (cache.type()) {
      case KVType::kF32:
        append(cache.keys_f32(l));
        append(cache.values_f32(l));
        break;
      case KVType::kF16:
        append(cache.keys_f16(l));
        append(cache.values_f16(l));
        break;
      case KVType::kQ8:
        append(cache.keys_q8(l));
        append(cache.values_q8(l));
        break;
    }
  }
  return out;
}

// Prefills the prompt in chunks of the given sizes (summing to p.n). With decode_rows > 0 each
// chunk follows that many single-row entries of other sequences in the same forward; sliced, the
// chunk runs one layer range at a time with a forward of those decode rows in between, as the
// scheduler does while other sequences decode.
Prefilled prefill(TextDecoder& decoder, const TextConfig& c, const Prompt& p,
                  const std::vector<int64_t>& chunks, int64_t decode_rows, bool sliced = false) {
  const int64_t h = c.hidden_size;
  KVCache cache = decoder.new_cache();
  std::vector<KVCache> others;
  for (int64_t i = 0; i < decode_rows; ++i) others.push_back(decoder.new_cache());
  Prefilled out;
  out.hidden.resize(static_cast<size_t>(p.n * h));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int64_t begin = 0;
  for (const int64_t rows : chunks) {
    const int64_t total = decode_rows + rows;
    std::vector<float> x(static_cast<size_t>(total * h)), hidden(x.size());
    for (int64_t i = 0; i < decode_rows * h; ++i) x[static_cast<size_t>(i)] = normal(rng);
    std::memcpy(x.data() + decode_rows * h, p.x.data() + begin * h, sizeof(float) * rows * h);
    std::vector<int64_t> positions(static_cast<size_t>(3 * total));
    std::vector<BatchEntry> entries;
    for (int64_t i = 0; i < decode_rows; ++i) {
      const int64_t at = others[static_cast<size_t>(i)].length() + 5 * i;
      std::fill(positions.begin() + 3 * i, positions.begin() + 3 * i + 3, at);
      entries.push_back({&others[static_cast<size_t>(i)], 1, positions.data() + 3 * i});
    }
    int64_t* chunk_positions = positions.data() + 3 * decode_rows;
    for (int64_t s = 0; s < 3; ++s) {
      std::copy(p.positions.begin() + s * p.n + begin, p.positions.begin() + s * p.n + begin + rows,
                chunk_positions + s * rows);
    }
    entries.push_back({&cache, rows, chunk_positions});
    LayerFeatureAdds adds;
    size_t first = 0;
    while (first < p.image_rows.size() && p.image_rows[first] < begin) ++first;
    size_t last = first;
    while (last < p.image_rows.size() && p.image_rows[last] < begin + rows) ++last;
    for (size_t r = first; r < last; ++r)
      adds.rows.push_back(p.image_rows[r] - begin + decode_rows);
    if (first != last) {
      for (const auto& f : p.deepstack) adds.per_layer.push_back(f.data() + first * h);
    }
    if (!sliced) {
      decoder.forward_batch(x.data(), entries, adds.rows.empty() ? nullptr : &adds, hidden.data());
    } else {
      const std::vector<BatchEntry> decodes(entries.begin(), entries.end() - 1);
      for (size_t r = 0; r < adds.rows.size(); ++r) adds.rows[r] -= decode_rows;
      float* chunk_x = x.data() + decode_rows * h;
      for (int64_t l0 = 0; l0 < c.num_layers; l0 += 2) {
        if (!decodes.empty()) decoder.forward_batch(x.data(), decodes, nullptr, hidden.data());
        decoder.forward_layers(chunk_x, {entries.back()}, adds.rows.empty() ? nullptr : &adds, l0,
                               std::min(c.num_layers, l0 + 2), hidden.data() + decode_rows * h);
      }
    }
    std::memcpy(out.hidden.data() + begin * h, hidden.data() + decode_rows * h,
                sizeof(float) * rows * h);
    begin += rows;
  }
  EXPECT_EQ(begin, p.n);
  out.logits.resize(static_cast<size_t>(c.vocab_size));
  decoder.logits(out.hidden.data() + (p.n - 1) * h, 1, out.logits.data());
  out.kv = kv_bytes(cache, c.num_layers);
  return out;
}

std::vector<int64_t> uniform_chunks(int64_t n, int64_t size) {
  std::vector<int64_t> out;
  for (int64_t begin = 0; begin < n; begin += size) out.push_back(std::min(size, n - begin));
  return out;
}

void expect_identical(const Prefilled& want, const Prefilled& got, int64_t hidden) {
  ASSERT_EQ(want.hidden.size(), got.hidden.size());
  for (size_t i = 0; i < want.hidden.size(); ++i) {
    if (std::memcmp(&want.hidden[i], &got.hidden[i], sizeof(float)) != 0) {
      ADD_FAILURE() << "hidden state of row " << i / static_cast<size_t>(hidden) << " differs ("
                    << want.hidden[i] << " vs " << got.hidden[i] << ")";
      break;
    }
  }
  EXPECT_EQ(0, std::memcmp(want.logits.data(), got.logits.data(), want.logits.size() * 4))
      << "logits differ";
  EXPECT_TRUE(want.kv == got.kv) << "KV cache differs";
}

TEST(ChunkedPrefill, AnyChunkingOfSixteenRowsOrMoreGivesIdenticalResults) {
  const TextConfig c = small_config();
  constexpr int64_t kRows = 300;
  const Prompt prompt = make_prompt(c, kRows);
  struct Mode {
    ops::QuantType weights;
    KVType kv;
  };
  // One mode per weight type; every KV type is among them.
  for (const Mode mode :
       {Mode{ops::QuantType::kExact, KVType::kF32}, Mode{ops::QuantType::kBF16, KVType::kF16},
        Mode{ops::QuantType::kQ8, KVType::kQ8}, Mode{ops::QuantType::kQ4, KVType::kF16}}) {
    SCOPED_TRACE(std::string(ops::quant_type_name(mode.weights)) + " weights, " +
                 kv_type_name(mode.kv) + " KV");
    RandomModel model;
    build(model, c, mode.weights);
    TextDecoder decoder(c, model.weights);
    if (mode.kv != KVType::kF32) decoder.use_kv_type(mode.kv);
    const Prefilled whole = prefill(decoder, c, prompt, {kRows}, 0);
    const std::vector<std::vector<int64_t>> chunkings = {
        {256, 44},
        uniform_chunks(kRows - 28, 32),  // then a 28-row tail below
        {16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 28},
        {37, 19, 23, 61, 17, 16, 127},
        {17, 283},
    };
    for (size_t i = 0; i < chunkings.size(); ++i) {
      std::vector<int64_t> chunks = chunkings[i];
      if (i == 1) chunks.push_back(28);
      SCOPED_TRACE("chunking " + std::to_string(i));
      expect_identical(whole, prefill(decoder, c, prompt, chunks, 0), c.hidden_size);
      // The same chunks after three decode rows of other sequences in each forward.
      expect_identical(whole, prefill(decoder, c, prompt, chunks, 3), c.hidden_size);
      // The chunks' layers spread over steps that decode other sequences.
      expect_identical(whole, prefill(decoder, c, prompt, chunks, 2, /*sliced=*/true),
                       c.hidden_size);
    }
  }
}

}  // namespace
}  // namespace qvl
