// sample_video: one media-worker launch per video gives what the two-step VideoSource path gives
// (info, the processor's indices and size, the resized frames, bit for bit) and the same errors.
#include "media/video_sampled.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "image/video_sampling.h"
#include "media/video_clips.h"

namespace qvl::media {
namespace {

class VideoSampled : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!video_supported()) GTEST_SKIP() << "built with QVL_VIDEO=OFF";
  }
};

VideoLimits in_process() {
  VideoLimits limits;
  limits.isolation = VideoIsolation::kInProcess;
  return limits;
}

// Qwen3-VL's processor at 4 fps with a budget that shrinks the frames.
VideoPreprocessConfig processor() {
  VideoPreprocessConfig config;
  config.sampling.fps = 4;
  config.max_pixels = 8 * 32 * 32 * 2;
  return config;
}

void expect_error(const std::string& bytes, const VideoLimits& limits,
                  const VideoPreprocessConfig& config, ErrorCode code, const std::string& text) {
  try {
    sample_video(bytes, limits, config);
    ADD_FAILURE() << "no error, expected " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST_F(VideoSampled, WorkerAndInProcessEqualTheTwoStepPath) {
  for (const auto& spec : {testing::mp4_h264(), testing::portrait_mp4(), testing::webp_clip()}) {
    SCOPED_TRACE(spec.name);
    const std::string bytes = testing::make_clip(spec);
    const VideoPreprocessConfig config = processor();
    VideoSource source = VideoSource::open(bytes, in_process());
    const std::vector<int64_t> indices =
        sample_frame_indices(source.info().frame_count, source.info().fps, config.sampling);
    const ImageSize size = video_frame_size(static_cast<int64_t>(indices.size()),
                                            source.info().width, source.info().height, config);
    const std::vector<VideoFrame> expected =
        source.resized_frames_at(indices, size.width, size.height);
    for (const VideoLimits& limits : {VideoLimits{}, in_process()}) {
      const SampledVideo video = sample_video(bytes, limits, config);
      EXPECT_EQ(video.info.frame_count, spec.frames);
      EXPECT_EQ(video.info.fps, source.info().fps);
      EXPECT_EQ(video.info.container, source.info().container);
      EXPECT_EQ(video.indices, indices);
      ASSERT_EQ(video.frames.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(video.frames[i].width, size.width);
        EXPECT_EQ(video.frames[i].height, size.height);
        EXPECT_EQ(video.frames[i].pixels, expected[i].image.pixels) << "frame " << i;
      }
    }
  }
}

// The decoder's and the processor's refusals come back from the worker unchanged.
TEST_F(VideoSampled, ErrorsAreTheDecodersAndTheProcessors) {
  for (const VideoLimits& limits : {VideoLimits{}, in_process()}) {
    expect_error("", limits, processor(), ErrorCode::kInvalidArgument, "empty");
    expect_error(std::string(4096, 'x'), limits, processor(), ErrorCode::kInvalidArgument,
                 "not a video");
    const std::string clip = testing::make_clip(testing::mp4_h264());
    expect_error(clip.substr(0, clip.size() / 3), limits, processor(), ErrorCode::kCorrupt, "");
    VideoLimits small = limits;
    small.max_bytes = 1000;
    expect_error(clip, small, processor(), ErrorCode::kResourceExhausted,
                 "above the limit of 1000");
    // One sampled frame: transformers refuses fewer frames than the temporal patch.
    VideoPreprocessConfig one = processor();
    one.sampling.min_frames = 1;
    one.sampling.max_frames = 1;
    try {
      sample_video(clip, in_process(), one);
      ADD_FAILURE() << "one frame accepted";
    } catch (const Error& in_process_error) {
      expect_error(clip, limits, one, in_process_error.code(), in_process_error.what());
    }
  }
}

}  // namespace
}  // namespace qvl::media
