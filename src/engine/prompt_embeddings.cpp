#include "engine/prompt_embeddings.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace qvl {

PromptEmbeddings::PromptEmbeddings(const TextDecoder& decoder, const ModelConfig& config,
                                   std::vector<int64_t> ids,
                                   std::vector<SharedImageFeatures> images)
    : decoder_(&decoder),
      hidden_(config.text.hidden_size),
      image_token_id_(config.image_token_id),
      video_token_id_(config.video_token_id),
      ids_(std::move(ids)),
      images_(std::move(images)) {
  size_t img = 0;
  int64_t row_in_image = 0;
  for (int64_t i = 0; i < rows(); ++i) {
    if (ids_[i] != image_token_id_ && ids_[i] != video_token_id_) continue;
    while (img < images_.size() && row_in_image >= images_[img]->vision.tokens) {
      ++img;
      row_in_image = 0;
    }
    QVL_CHECK(img < images_.size());  // prompt_token_ids makes the pads match the images
    pad_rows_.push_back(i);
    pad_sources_.push_back({static_cast<int32_t>(img), static_cast<int32_t>(row_in_image)});
    ++row_in_image;
  }
}

void PromptEmbeddings::make_rows(int64_t begin, int64_t end, float* x,
                                 RangeFeatureAdds& adds) const {
  QVL_CHECK(decoder_ != nullptr && 0 <= begin && begin <= end && end <= rows());
  decoder_->embed(ids_.data() + begin, end - begin, x);
  adds.adds.rows.clear();
  adds.adds.per_layer.clear();
  const auto first = std::lower_bound(pad_rows_.begin(), pad_rows_.end(), begin);
  const auto last = std::lower_bound(pad_rows_.begin(), pad_rows_.end(), end);
  if (first == last) return;
  const size_t k0 = static_cast<size_t>(first - pad_rows_.begin());
  const size_t k1 = static_cast<size_t>(last - pad_rows_.begin());
  bool one_run = true;  // consecutive rows of one image
  for (size_t k = k0; k < k1; ++k) {
    const PadSource& s = pad_sources_[k];
    const VisionOutput& v = images_[static_cast<size_t>(s.image)]->vision;
    std::memcpy(x + (pad_rows_[k] - begin) * hidden_, &v.embeds[s.row * hidden_],
                sizeof(float) * static_cast<size_t>(hidden_));
    adds.adds.rows.push_back(pad_rows_[k] - begin);
    one_run = one_run && s.image == pad_sources_[k0].image &&
              s.row == pad_sources_[k0].row + static_cast<int32_t>(k - k0);
  }
  const VisionOutput& v0 = images_[static_cast<size_t>(pad_sources_[k0].image)]->vision;
  const size_t layers = v0.deepstack.size();
  if (one_run) {
    for (size_t d = 0; d < layers; ++d) {
      adds.adds.per_layer.push_back(v0.deepstack[d].data() + pad_sources_[k0].row * hidden_);
    }
    return;
  }
  adds.copies.resize(layers);
  for (size_t d = 0; d < layers; ++d) {
    std::vector<float>& copy = adds.copies[d];
    copy.resize((k1 - k0) * static_cast<size_t>(hidden_));
    for (size_t k = k0; k < k1; ++k) {
      const PadSource& s = pad_sources_[k];
      const std::vector<float>& f = images_[static_cast<size_t>(s.image)]->vision.deepstack[d];
      std::memcpy(&copy[(k - k0) * hidden_], &f[s.row * hidden_],
                  sizeof(float) * static_cast<size_t>(hidden_));
    }
    adds.adds.per_layer.push_back(copy.data());
  }
}

}  // namespace qvl
