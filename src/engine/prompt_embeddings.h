// The text decoder's input for a prompt: token embeddings with each image's features written
// over its pad tokens, and the image's DeepStack features to add after the first layers.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/image_features.h"
#include "model/config.h"
#include "model/text_decoder.h"

namespace qvl {

struct PromptEmbeddings {
  PromptEmbeddings() = default;
  // adds.per_layer points into deepstack: moving keeps the buffers, copying would not.
  PromptEmbeddings(PromptEmbeddings&&) = default;
  PromptEmbeddings& operator=(PromptEmbeddings&&) = default;
  PromptEmbeddings(const PromptEmbeddings&) = delete;
  PromptEmbeddings& operator=(const PromptEmbeddings&) = delete;

  std::vector<float> x;  // [n, hidden]
  std::vector<std::vector<float>> deepstack;
  LayerFeatureAdds adds;

  const LayerFeatureAdds* adds_or_null() const { return adds.rows.empty() ? nullptr : &adds; }
};

// ids: a prompt whose image pads match `images` (as prompt_token_ids builds it). Images are
// taken in order of appearance; pad rows go to the images one after another.
PromptEmbeddings embed_prompt(const TextDecoder& decoder, const ModelConfig& config,
                              const std::vector<int64_t>& ids,
                              const std::vector<SharedImageFeatures>& images);

}  // namespace qvl
