// Where each patch of an image sits, as the vision tower sees it. Patches are in merge-window
// order: 2x2 blocks in raster order, raster order inside each block.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "ops/weight_ref.h"

namespace qvl {

// (row, col) of patch i of a grid_h x grid_w image in merge-window order.
void patch_coordinates(int64_t grid_h, int64_t grid_w, int64_t merge, std::vector<int64_t>& rows,
                       std::vector<int64_t>& cols);

// Learned position table [side*side, hidden] resampled to the patch grid with bilinear,
// align-corners weights; out is [grid_h * grid_w, hidden] in merge-window order.
void interpolate_position_embeddings(const ops::WeightRef& table, int64_t grid_h, int64_t grid_w,
                                     int64_t merge, float* out);

// 2-D rotary angles per patch: head_dim/4 row frequencies then head_dim/4 column frequencies
// (theta 10000); out is [grid_h * grid_w, head_dim / 2].
void vision_rotary_angles(int64_t grid_h, int64_t grid_w, int64_t merge, int64_t head_dim,
                          float* out);

}  // namespace qvl
