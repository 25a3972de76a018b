#include "engine/prompt_embeddings.h"

#include <cstring>

#include "base/error.h"

namespace qvl {

PromptEmbeddings embed_prompt(const TextDecoder& decoder, const ModelConfig& config,
                              const std::vector<int64_t>& ids,
                              const std::vector<SharedImageFeatures>& images) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t hidden = config.text.hidden_size;
  PromptEmbeddings out;
  out.x.resize(static_cast<size_t>(n * hidden));
  decoder.embed(ids.data(), n, out.x.data());
  out.deepstack.resize(config.vision.deepstack_visual_indexes.size());
  size_t img = 0;
  int64_t row_in_image = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] != config.image_token_id) continue;
    while (img < images.size() && row_in_image >= images[img]->vision.tokens) {
      ++img;
      row_in_image = 0;
    }
    QVL_CHECK(img < images.size());  // prompt_token_ids makes the pads match the images
    const VisionOutput& v = images[img]->vision;
    std::memcpy(&out.x[i * hidden], &v.embeds[row_in_image * hidden], sizeof(float) * hidden);
    for (size_t d = 0; d < out.deepstack.size(); ++d) {
      out.deepstack[d].insert(out.deepstack[d].end(),
                              v.deepstack[d].begin() + row_in_image * hidden,
                              v.deepstack[d].begin() + (row_in_image + 1) * hidden);
    }
    out.adds.rows.push_back(i);
    ++row_in_image;
  }
  for (const auto& d : out.deepstack) out.adds.per_layer.push_back(d.data());
  return out;
}

}  // namespace qvl
