#include "model/rope_index.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace qvl {

RopePositions compute_rope_positions(const std::vector<int64_t>& ids,
                                     const std::vector<ImageGrid>& grids, int64_t image_token_id,
                                     int64_t merge, int64_t video_token_id) {
  const int64_t n = static_cast<int64_t>(ids.size());
  RopePositions out;
  out.n = n;
  out.pos.assign(static_cast<size_t>(3 * n), 0);
  int64_t next = 0;  // first position of the next text run: previous max + 1
  size_t image = 0;
  int64_t i = 0;
  while (i < n) {
    const int64_t pad = ids[i];
    if (pad != image_token_id && (video_token_id < 0 || pad != video_token_id)) {
      for (int d = 0; d < 3; ++d) out.pos[d * n + i] = next;
      ++next;
      ++i;
      continue;
    }
    if (image >= grids.size()) {
      fail(ErrorCode::kInvalidArgument, "prompt has more image pad runs than images");
    }
    const ImageGrid& g = grids[image++];
    if (g.h % merge != 0 || g.w % merge != 0 || g.t <= 0) {
      fail(ErrorCode::kInvalidArgument, "image grid is not divisible by the merge size");
    }
    const int64_t gh = g.h / merge, gw = g.w / merge, count = g.t * gh * gw;
    if (i + count > n) fail(ErrorCode::kInvalidArgument, "image pad run is shorter than its grid");
    for (int64_t k = 0; k < count; ++k) {
      if (ids[i + k] != pad) {
        fail(ErrorCode::kInvalidArgument,
             "image pad run " + std::to_string(image) + " has fewer pads than its grid needs");
      }
      const int64_t tt = k / (gh * gw), row = (k / gw) % gh, col = k % gw;
      out.pos[0 * n + i + k] = next + tt;
      out.pos[1 * n + i + k] = next + row;
      out.pos[2 * n + i + k] = next + col;
    }
    next += std::max({g.t, gh, gw});
    i += count;
  }
  if (image != grids.size()) {
    fail(ErrorCode::kInvalidArgument, "prompt has " + std::to_string(image) +
                                          " image pad runs but " + std::to_string(grids.size()) +
                                          " images were given");
  }
  out.delta = next - n;
  return out;
}

}  // namespace qvl
