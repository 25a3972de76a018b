// Every weight matrix of the text decoder or the vision tower, for code that treats them alike
// (counting bytes, paging them in).
#pragma once

#include "model/text_decoder.h"
#include "model/vision_weights.h"
#include "ops/packed_matrix.h"

namespace qvl {

// fn(const ops::PackedMatrix&) for the layers' matrices (for_each_layer_matrix) and the output
// head.
template <typename Fn>
void for_each_matrix(const TextWeights& w, Fn&& fn) {
  for (const TextLayerWeights& l : w.layers) for_each_layer_matrix(l, fn);
  fn(w.lm_head);
}

// fn(const ops::PackedMatrix&) for the patch embedding, the blocks' and the mergers' linears.
template <typename Fn>
void for_each_matrix(const VisionWeights& w, Fn&& fn) {
  fn(w.patch_embed);
  for (const VisionBlockWeights& b : w.blocks) {
    for (const LinearWeights* l : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) fn(l->weight);
  }
  const auto merger = [&](const MergerWeights& m) {
    fn(m.fc1.weight);
    fn(m.fc2.weight);
  };
  merger(w.merger);
  for (const MergerWeights& m : w.deepstack_mergers) merger(m);
}

}  // namespace qvl
