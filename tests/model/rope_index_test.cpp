#include "model/rope_index.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace qvl {
namespace {

constexpr int64_t kPad = 151655;

TEST(RopeIndex, TextOnlyCountsUp) {
  const RopePositions p = compute_rope_positions({1, 2, 3}, {}, kPad, 2);
  EXPECT_EQ(p.pos, (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(p.delta, 0);
}

TEST(RopeIndex, ImagesAcrossTurns) {
  // text(2) image A (grid 1x4x6 -> 2x3 = 6 pads) text(1) image B (1x2x2 -> 1 pad) text(1)
  std::vector<int64_t> ids = {10, 11};
  for (int i = 0; i < 6; ++i) ids.push_back(kPad);
  ids.push_back(12);
  ids.push_back(kPad);
  ids.push_back(13);
  const RopePositions p = compute_rope_positions(ids, {{1, 4, 6}, {1, 2, 2}}, kPad, 2);
  const int64_t n = static_cast<int64_t>(ids.size());
  auto at = [&](int d, int i) { return p.pos[d * n + i]; };
  // Image A starts at s = 2: t = 2, h = 2 + row, w = 2 + col over a 2x3 grid.
  const int64_t rows[6] = {0, 0, 0, 1, 1, 1}, cols[6] = {0, 1, 2, 0, 1, 2};
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(at(0, 2 + k), 2);
    EXPECT_EQ(at(1, 2 + k), 2 + rows[k]);
    EXPECT_EQ(at(2, 2 + k), 2 + cols[k]);
  }
  // The next text resumes at s + max(2, 3) = 5 on all axes; image B at 6; last text at 7.
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(at(d, 8), 5);
    EXPECT_EQ(at(d, 9), 6);
    EXPECT_EQ(at(d, 10), 7);
  }
  EXPECT_EQ(p.delta, 8 - n);
}

TEST(RopeIndex, MismatchedPadsAreErrors) {
  EXPECT_THROW(compute_rope_positions({1, kPad, kPad}, {{1, 2, 2}}, kPad, 2), Error);  // 2 != 1
  EXPECT_THROW(compute_rope_positions({1, kPad}, {}, kPad, 2), Error);
  EXPECT_THROW(compute_rope_positions({1, 2}, {{1, 2, 2}}, kPad, 2), Error);
  EXPECT_THROW(compute_rope_positions({1, kPad}, {{1, 3, 2}}, kPad, 2), Error);
}

}  // namespace
}  // namespace qvl
