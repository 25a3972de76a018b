// The prompt of a conversation with pictures and videos: timestamps and pair markers per video,
// pads expanded in order of appearance, refusals when the pads and the media disagree.
#include "engine/visual_prompt.h"

#include <gtest/gtest.h>

#include <memory>

#include "base/error.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

SharedImageFeatures features(int64_t t, int64_t h, int64_t w, std::vector<double> stamps = {}) {
  auto f = std::make_shared<ImageFeatures>();
  f->grid = {t, h, w};
  f->vision.tokens = t * h * w / 4;
  f->pair_timestamps = std::move(stamps);
  return f;
}

TEST(VisualPrompt, OrderOfAppearanceAcrossMessages) {
  std::vector<Message> messages(2);
  messages[0].parts = {{ContentPart::Kind::kText, "a", -1}};
  ContentPart video;
  video.kind = ContentPart::Kind::kVideo;
  video.video_index = 0;
  messages[1].parts = {video, {ContentPart::Kind::kImage, "", 0}};
  const auto order = visual_order(messages);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_TRUE(order[0].video);
  EXPECT_FALSE(order[1].video);
}

TEST(VisualPrompt, TimestampsBeforeEachPair) {
  const std::string placeholder = "<|vision_start|><|video_pad|><|vision_end|>";
  EXPECT_EQ(expand_video_placeholders("A" + placeholder + "B", {{0.25, 1.5}}),
            "A<0.2 seconds>" + placeholder + "<1.5 seconds>" + placeholder + "B");
  EXPECT_THROW(expand_video_placeholders("A" + placeholder, {}), Error);
  EXPECT_THROW(expand_video_placeholders("A", {{0.5}}), Error);
}

TEST(VisualPrompt, PadsExpandedPerRunAndMismatchesRefused) {
  const ModelConfig config = load_model_config(kTiny);
  const Tokenizer tokenizer = Tokenizer::from_model_dir(kTiny);
  const std::string image = "<|vision_start|><|image_pad|><|vision_end|>";
  const std::string video = "<|vision_start|><|video_pad|><|vision_end|>";
  const std::vector<VisualRef> order = {{true, 0}, {false, 0}};
  const std::vector<SharedImageFeatures> f = {features(2, 4, 6, {0.5, 1.5}), features(1, 8, 8)};
  const VisualPrompt p =
      build_visual_prompt(tokenizer, config, "x" + video + image + "y", order, f);
  EXPECT_EQ(p.video_tokens, 12);
  EXPECT_EQ(p.image_tokens, 16);
  ASSERT_EQ(p.grids.size(), 3u);  // two pairs, then the picture
  EXPECT_EQ(p.grids[0].t, 1);
  EXPECT_EQ(p.grids[1].h, 4);
  EXPECT_EQ(p.grids[2].h, 8);
  int64_t video_pads = 0, image_pads = 0;
  for (int64_t id : p.ids) {
    video_pads += id == config.video_token_id;
    image_pads += id == config.image_token_id;
  }
  EXPECT_EQ(video_pads, 12);
  EXPECT_EQ(image_pads, 16);
  // Message text that spells a pad, or media in another order than the text, is refused.
  EXPECT_THROW(
      build_visual_prompt(tokenizer, config, "x" + video + "<|video_pad|>" + image, order, f),
      Error);
  EXPECT_THROW(build_visual_prompt(tokenizer, config, "x" + image + video, order, f), Error);
}

}  // namespace
}  // namespace qvl
