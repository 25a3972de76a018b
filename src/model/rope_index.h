// 3-D positions of a prompt (transformers' get_rope_index for Qwen3-VL, images only).
#pragma once

#include <cstdint>
#include <vector>

namespace qvl {

struct ImageGrid {
  int64_t t = 1, h = 0, w = 0;  // in patches, before the spatial merge
};

struct RopePositions {
  std::vector<int64_t> pos;  // [3, n]: t row, h row, w row
  int64_t n = 0;
  int64_t delta = 0;  // max(pos) + 1 - n; decode step i (0-based) uses n + i + delta
};

// ids: prompt with every image already expanded to t*(h/m)*(w/m) image_token_id pads, each run
// directly after a vision_start token. grids: one per image, in order of appearance.
// Video pads (video_token_id, when >= 0) are runs as well: a video is split per frame pair
// (t = 1 each, its "<t seconds>" text between them), as transformers' get_rope_index does, so
// grids then hold one entry per pair. Throws if the pads do not match the grids.
RopePositions compute_rope_positions(const std::vector<int64_t>& ids,
                                     const std::vector<ImageGrid>& grids, int64_t image_token_id,
                                     int64_t spatial_merge_size, int64_t video_token_id = -1);

}  // namespace qvl
