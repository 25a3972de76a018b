// A prompt's decoder input made range by range: token embeddings, image features over the pads,
// DeepStack rows pointing into the image's own features (no copy) unless a range's pads span
// two images.
#include "engine/prompt_embeddings.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace qvl {
namespace {

constexpr int64_t kHidden = 8, kVocab = 16, kPad = 9, kLayers = 2;

struct Fixture {
  std::vector<float> table;
  TextWeights weights;
  ModelConfig config;
  std::unique_ptr<TextDecoder> decoder;

  Fixture() {
    config.text.vocab_size = kVocab;
    config.text.hidden_size = kHidden;
    config.text.num_layers = 1;
    config.text.num_heads = 1;
    config.text.num_kv_heads = 1;
    config.text.head_dim = 8;
    config.text.intermediate_size = 8;
    config.text.max_position_embeddings = 64;
    config.text.mrope_section = {2, 1, 1};
    config.image_token_id = kPad;
    for (int64_t t = 0; t < kVocab; ++t) {
      for (int64_t j = 0; j < kHidden; ++j) table.push_back(static_cast<float>(t * 100 + j));
    }
    weights.embed_tokens = ops::WeightRef{ops::WeightType::kF32, table.data(), kVocab, kHidden};
    decoder = std::make_unique<TextDecoder>(config.text, weights);
  }
};

// Row r of image `image`: embeds r * 10 + image * 1000 (+ j), DeepStack layer d adds d * 1e5.
SharedImageFeatures image_with(int64_t tokens, int image) {
  auto f = std::make_shared<ImageFeatures>();
  f->vision.tokens = tokens;
  f->vision.deepstack.resize(kLayers);
  for (int64_t r = 0; r < tokens; ++r) {
    for (int64_t j = 0; j < kHidden; ++j) {
      const float v = static_cast<float>(image * 1000 + r * 10 + j);
      f->vision.embeds.push_back(v);
      for (int64_t d = 0; d < kLayers; ++d) f->vision.deepstack[d].push_back(v + d * 1e5f);
    }
  }
  return f;
}

TEST(PromptEmbeddings, RangesGiveTokenRowsImageRowsAndTheirDeepStackFeatures) {
  Fixture fx;
  // text, image 0 (3 pads), text, image 1 (2 pads), text
  const std::vector<int64_t> ids = {1, 2, kPad, kPad, kPad, 3, kPad, kPad, 4};
  const std::vector<SharedImageFeatures> images = {image_with(3, 0), image_with(2, 1)};
  const PromptEmbeddings prompt(*fx.decoder, fx.config, ids, images);
  ASSERT_EQ(prompt.rows(), 9);
  // Expected row source: token t -> t * 100; pad -> image row value.
  const std::vector<float> row_base = {100, 200, 0, 10, 20, 300, 1000, 1010, 400};
  for (int64_t begin = 0; begin < 9; ++begin) {
    for (int64_t end = begin; end <= 9; ++end) {
      std::vector<float> x(static_cast<size_t>((end - begin) * kHidden), -1.0f);
      RangeFeatureAdds adds;
      prompt.make_rows(begin, end, x.data(), adds);
      std::vector<int64_t> want_rows;
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t j = 0; j < kHidden; ++j) {
          ASSERT_EQ(x[(i - begin) * kHidden + j], row_base[i] + j) << begin << " " << end;
        }
        if (ids[i] == kPad) want_rows.push_back(i - begin);
      }
      ASSERT_EQ(adds.adds.rows, want_rows);
      if (want_rows.empty()) {
        EXPECT_EQ(adds.or_null(), nullptr);
        continue;
      }
      ASSERT_EQ(adds.adds.per_layer.size(), static_cast<size_t>(kLayers));
      for (int64_t d = 0; d < kLayers; ++d) {
        for (size_t k = 0; k < want_rows.size(); ++k) {
          const int64_t i = begin + want_rows[k];
          for (int64_t j = 0; j < kHidden; ++j) {
            ASSERT_EQ(adds.adds.per_layer[d][k * kHidden + j], row_base[i] + j + d * 1e5f);
          }
        }
      }
      // Pads of one image only: the features are read in place.
      const bool spans_both = begin <= 4 && end >= 7;
      const int first_image = begin <= 4 ? 0 : 1;
      const float* own = images[first_image]->vision.deepstack[1].data();
      const float* end_of_own = own + images[first_image]->vision.deepstack[1].size();
      const bool in_place = adds.adds.per_layer[1] >= own && adds.adds.per_layer[1] < end_of_own;
      EXPECT_EQ(in_place, !spans_both) << begin << " " << end;
    }
  }
}

TEST(PromptEmbeddings, PadsWithoutEnoughImagesAreRejected) {
  Fixture fx;
  const std::vector<int64_t> ids = {1, kPad, kPad, kPad};
  EXPECT_ANY_THROW(PromptEmbeddings(*fx.decoder, fx.config, ids, {image_with(2, 0)}));
}

}  // namespace
}  // namespace qvl
