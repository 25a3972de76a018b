// The text decoder's input for a prompt: token embeddings with each image's features written
// over its pad tokens, and the image's DeepStack features to add after the first layers.
// Made one range of rows at a time (a prefill chunk) from the token ids and the images' shared
// features, so a prompt never holds a second copy of its images' features or of the
// embeddings of rows already in the KV cache (a 1024x768 image: ~25 MB less at the peak).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/image_features.h"
#include "model/config.h"
#include "model/text_decoder.h"

namespace qvl {

// The DeepStack features of a range of prompt rows. adds.per_layer points into the image's
// features when the range's image rows are consecutive rows of one image (the usual case), else
// into `copies`.
struct RangeFeatureAdds {
  LayerFeatureAdds adds;  // rows index the range
  std::vector<std::vector<float>> copies;

  const LayerFeatureAdds* or_null() const { return adds.rows.empty() ? nullptr : &adds; }
};

class PromptEmbeddings {
 public:
  PromptEmbeddings() = default;
  // ids: a prompt whose image pads match `images` (as prompt_token_ids builds it). Images are
  // taken in order of appearance; pad rows go to the images one after another. The decoder
  // must outlive this object.
  PromptEmbeddings(const TextDecoder& decoder, const ModelConfig& config, std::vector<int64_t> ids,
                   std::vector<SharedImageFeatures> images);

  int64_t rows() const { return static_cast<int64_t>(ids_.size()); }
  // Rows [begin, end): embeddings into x [end - begin, hidden], DeepStack features into adds.
  void make_rows(int64_t begin, int64_t end, float* x, RangeFeatureAdds& adds) const;

 private:
  // Which image and which of its rows the k-th pad row of the prompt is.
  struct PadSource {
    int32_t image;
    int32_t row;
  };
  const TextDecoder* decoder_ = nullptr;
  int64_t hidden_ = 0;
  int64_t image_token_id_ = -1;
  int64_t video_token_id_ = -1;  // a video's pads take its rows like an image's
  std::vector<int64_t> ids_;
  std::vector<SharedImageFeatures> images_;
  std::vector<int64_t> pad_rows_;  // ascending prompt rows of the image pads
  std::vector<PadSource> pad_sources_;
};

}  // namespace qvl
