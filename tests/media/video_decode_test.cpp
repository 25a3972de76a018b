// The video decoder on real clips of every supported container and codec: what info() reports,
// and that frame k is really frame k (the clips' frames carry their number), after seeking,
// with repeats, at variable frame rates, turned by a display matrix, and in GIF and WebP.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "image/resize.h"
#include "media/video_clips.h"
#include "media/video_source.h"

namespace qvl::media {
namespace {

using testing::ClipSpec;
using testing::make_clip;
using testing::read_frame_code;

class VideoDecode : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!video_supported()) GTEST_SKIP() << "built with QVL_VIDEO=OFF";
  }
};

// Every index of `indices` decodes to the frame carrying that number.
std::vector<VideoFrame> expect_frames(VideoSource& video, const std::vector<int64_t>& indices) {
  std::vector<VideoFrame> frames = video.frames_at(indices);
  EXPECT_EQ(frames.size(), indices.size());
  if (frames.size() != indices.size()) frames.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    EXPECT_EQ(frames[i].index, indices[i]);
    EXPECT_EQ(frames[i].image.width, video.info().width);
    EXPECT_EQ(frames[i].image.height, video.info().height);
    EXPECT_EQ(read_frame_code(frames[i].image), indices[i] & 255) << "asked for " << indices[i];
  }
  return frames;
}

struct FormatCase {
  ClipSpec (*spec)();
  const char* container;
  const char* codec;
  const char* count_source;
};

class VideoFormats : public VideoDecode, public ::testing::WithParamInterface<FormatCase> {};

TEST_P(VideoFormats, InfoAndEveryFrameByIndex) {
  const ClipSpec spec = GetParam().spec();
  VideoSource video = VideoSource::open(make_clip(spec));
  const VideoInfo& info = video.info();
  EXPECT_EQ(info.container, GetParam().container);
  EXPECT_EQ(info.codec, GetParam().codec);
  EXPECT_EQ(info.frame_count_source, GetParam().count_source);
  EXPECT_EQ(info.frame_count, spec.frames);
  EXPECT_NEAR(info.fps, spec.fps, 0.01);
  EXPECT_NEAR(info.duration_s, double(spec.frames) / spec.fps, 0.011);
  EXPECT_EQ(info.width, spec.width);
  EXPECT_EQ(info.height, spec.height);
  EXPECT_EQ(info.rotation_degrees, 0);
  std::vector<int64_t> all;
  for (int64_t k = 0; k < spec.frames; ++k) all.push_back(k);
  const auto frames = expect_frames(video, all);
  // The media worker (the default) and in-process decoding give the same bits.
  VideoLimits in_process;
  in_process.isolation = VideoIsolation::kInProcess;
  VideoSource direct = VideoSource::open(make_clip(spec), in_process);
  EXPECT_EQ(direct.info().frame_count, info.frame_count);
  EXPECT_EQ(direct.info().fps, info.fps);
  const std::vector<int64_t> sampled = {0, spec.frames / 2, spec.frames - 1};
  const auto sampled_direct = direct.frames_at(sampled);
  for (size_t i = 0; i < sampled.size(); ++i) {
    EXPECT_EQ(frames[size_t(sampled[i])].image.pixels, sampled_direct[i].image.pixels);
    EXPECT_EQ(frames[size_t(sampled[i])].time_s, sampled_direct[i].time_s);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Containers, VideoFormats,
    ::testing::Values(FormatCase{testing::mp4_h264, "mp4", "h264", "header"},
                      FormatCase{testing::mov_h264, "mov", "h264", "header"},
                      FormatCase{testing::mkv_h264, "matroska", "h264", "counted"},
                      FormatCase{testing::webm_vp8, "webm", "vp8", "counted"},
                      FormatCase{testing::webm_vp9, "webm", "vp9", "counted"},
                      FormatCase{testing::mkv_av1, "matroska", "av1", "counted"},
                      FormatCase{testing::mp4_hevc, "mp4", "hevc", "header"},
                      FormatCase{testing::mov_mpeg4, "mov", "mpeg4", "header"},
                      FormatCase{testing::gif_clip, "gif", "gif", "header"},
                      FormatCase{testing::webp_clip, "webp", "webp", "header"},
                      FormatCase{testing::portrait_mp4, "mp4", "h264", "header"}),
    [](const auto& param) {
      std::string name = param.param.spec().name;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST_F(VideoDecode, SparseIndicesRepeatsAndSeeksAcrossKeyframes) {
  const ClipSpec spec = testing::long_mp4();
  VideoSource video = VideoSource::open(make_clip(spec));
  ASSERT_EQ(video.info().frame_count, 160);
  // Far apart (seeks), repeated (one decode, two copies), adjacent, and the very last frame.
  expect_frames(video, {3, 3, 41, 42, 99, 100, 137, 159, 159});
  // Each call starts afresh: an earlier frame after a later call is fine.
  expect_frames(video, {0, 158});
  // Every third frame: the B-frames between wanted ones are skipped (no frame refers to them),
  // the wanted ones never are, and the frames after the skipped ones decode right.
  std::vector<int64_t> every_third;
  for (int64_t k = 1; k < 160; k += 3) every_third.push_back(k);
  const auto sparse = expect_frames(video, every_third);
  VideoLimits in_process;
  in_process.isolation = VideoIsolation::kInProcess;
  VideoSource direct = VideoSource::open(make_clip(spec), in_process);
  // Bit-identical to the same frames when every frame is wanted (nothing skipped).
  std::vector<int64_t> every;
  for (int64_t k = 0; k < 160; ++k) every.push_back(k);
  const auto all = direct.frames_at(every);
  for (size_t i = 0; i < every_third.size(); ++i) {
    EXPECT_EQ(all[size_t(every_third[i])].image.pixels, sparse[i].image.pixels) << every_third[i];
  }
}

TEST_F(VideoDecode, FrameTimesFollowTimestamps) {
  VideoSource video = VideoSource::open(make_clip(testing::long_mp4()));
  const auto frames = video.frames_at({0, 20, 101});
  EXPECT_NEAR(frames[0].time_s, 0.0, 1e-9);
  EXPECT_NEAR(frames[1].time_s, 1.0, 1e-3);
  EXPECT_NEAR(frames[2].time_s, 5.05, 1e-3);
}

TEST_F(VideoDecode, VariableFrameRateIndexesFramesNotTime) {
  VideoSource video = VideoSource::open(make_clip(testing::vfr_mp4()));
  const VideoInfo& info = video.info();
  EXPECT_EQ(info.frame_count, 20);
  // 20 frames over 2.5 s (the last frame lasts 0.1 s): the average rate.
  EXPECT_NEAR(info.duration_s, 2.5, 0.011);
  EXPECT_NEAR(info.fps, 8.0, 0.05);
  const auto frames = video.frames_at({9, 10, 19});
  EXPECT_EQ(read_frame_code(frames[0].image), 9);
  EXPECT_EQ(read_frame_code(frames[1].image), 10);
  EXPECT_EQ(read_frame_code(frames[2].image), 19);
  EXPECT_NEAR(frames[0].time_s, 0.9, 1e-3);
  EXPECT_NEAR(frames[1].time_s, 1.5, 1e-3);  // after the gap
  EXPECT_NEAR(frames[2].time_s, 2.4, 1e-3);
}

TEST_F(VideoDecode, EditListHidesTheFramesItCuts) {
  VideoSource video = VideoSource::open(testing::edit_list_mp4());
  const VideoInfo& info = video.info();
  EXPECT_EQ(info.frame_count, 15);  // the header says 17: the two cut frames are not frames
  EXPECT_EQ(info.frame_count_source, "counted");
  const auto frames = video.frames_at({0, 1, 7, 14});
  EXPECT_EQ(read_frame_code(frames[0].image), 10);
  EXPECT_EQ(read_frame_code(frames[1].image), 11);
  EXPECT_EQ(read_frame_code(frames[2].image), 17);
  EXPECT_EQ(read_frame_code(frames[3].image), 24);
  EXPECT_NEAR(frames[0].time_s, 0.0, 1e-9);
  EXPECT_NEAR(frames[3].time_s, 1.4, 1e-3);
}

TEST_F(VideoDecode, RepeatedTimestampsKeepFramesApart) {
  const testing::ClipSpec spec = testing::repeated_pts_mp4();
  VideoSource video = VideoSource::open(make_clip(spec));
  ASSERT_EQ(video.info().frame_count, spec.frames);
  std::vector<int64_t> all;
  for (int64_t k = 0; k < spec.frames; ++k) all.push_back(k);
  expect_frames(video, all);
}

// Where the stored frame's red (bottom-left) and blue (bottom-right) blocks land.
struct Turn {
  int degrees;
  int red_x, red_y, blue_x, blue_y;  // in quarters of the upright frame's width and height
};

class VideoRotation : public VideoDecode, public ::testing::WithParamInterface<Turn> {};

TEST_P(VideoRotation, DisplayMatrixIsApplied) {
  const Turn turn = GetParam();
  // FFmpeg 5.1's MP4 muxer writes its legacy "rotate=T" tag as a matrix that players (and the
  // ffmpeg program) turn by 360 - T clockwise; the comparison with ffmpeg below is the judge.
  const int tag = (360 - turn.degrees) % 360;
  VideoSource video = VideoSource::open(testing::rotated_mp4(tag));
  const VideoInfo& info = video.info();
  EXPECT_EQ(info.rotation_degrees, turn.degrees);
  const bool sideways = turn.degrees % 180 != 0;
  EXPECT_EQ(info.width, sideways ? 48 : 64);
  EXPECT_EQ(info.height, sideways ? 64 : 48);
  const auto frames = video.frames_at({5});
  const RgbImage& image = frames[0].image;
  ASSERT_EQ(image.width, info.width);
  EXPECT_EQ(read_frame_code(testing::rotate_back(image, turn.degrees)), 5);
  const auto red =
      testing::colour_at(image, turn.red_x * image.width / 4, turn.red_y * image.height / 4);
  const auto blue =
      testing::colour_at(image, turn.blue_x * image.width / 4, turn.blue_y * image.height / 4);
  EXPECT_GT(red[0], 180);
  EXPECT_LT(red[2], 80);
  EXPECT_GT(blue[2], 180);
  EXPECT_LT(blue[0], 80);
  // The picture the ffmpeg program shows (it applies the display matrix itself).
  const RgbImage shown =
      testing::ffmpeg_frame(testing::rotated_mp4_path(tag), 5, info.width, info.height);
  ASSERT_EQ(shown.pixels.size(), image.pixels.size());
  double difference = 0;
  for (size_t i = 0; i < shown.pixels.size(); ++i) {
    difference += std::abs(int(shown.pixels[i]) - int(image.pixels[i]));
  }
  EXPECT_LT(difference / double(shown.pixels.size()), 6.0);
}

// Stored: red at (1/4, 3/4), blue at (3/4, 3/4) of the width and height.
INSTANTIATE_TEST_SUITE_P(Turns, VideoRotation,
                         ::testing::Values(Turn{90, 1, 1, 1, 3}, Turn{180, 3, 1, 1, 1},
                                           Turn{270, 3, 3, 3, 1}),
                         [](const auto& param) { return std::to_string(param.param.degrees); });

TEST_F(VideoDecode, ResizedFramesEqualTheImageResize) {
  for (const VideoIsolation isolation : {VideoIsolation::kWorker, VideoIsolation::kInProcess}) {
    VideoLimits limits;
    limits.isolation = isolation;
    VideoSource video = VideoSource::open(make_clip(testing::webm_vp9()), limits);
    const auto full = video.frames_at({1, 1, 20});
    const auto resized = video.resized_frames_at({1, 1, 20}, 32, 64);
    ASSERT_EQ(resized.size(), 3u);
    for (size_t i = 0; i < resized.size(); ++i) {
      EXPECT_EQ(resized[i].index, full[i].index);
      EXPECT_EQ(resized[i].image.width, 32);
      EXPECT_EQ(resized[i].image.height, 64);
      EXPECT_EQ(resized[i].image.pixels, resize_bicubic(full[i].image, 32, 64).pixels);
    }
  }
}

TEST_F(VideoDecode, WorkerLimitsHold) {
  // The worker's output budget: more resized bytes than max_output_bytes is refused up front.
  VideoLimits limits;
  limits.max_output_bytes = 1000;
  VideoSource video = VideoSource::open(make_clip(testing::mp4_h264()), limits);
  try {
    video.resized_frames_at({0, 1}, 32, 32);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(std::string(e.what()).find("exceed the limit of 1000 bytes"), std::string::npos)
        << e.what();
  }
}

TEST_F(VideoDecode, ForEachFrameStreamsInOrder) {
  VideoSource video = VideoSource::open(make_clip(testing::mkv_h264()));
  std::vector<int64_t> seen;
  video.for_each_frame({2, 2, 7, 19}, [&](VideoFrame&& frame) {
    EXPECT_EQ(read_frame_code(frame.image), frame.index);
    seen.push_back(frame.index);
  });
  EXPECT_EQ(seen, (std::vector<int64_t>{2, 2, 7, 19}));
}

TEST_F(VideoDecode, AlphaIsCompositedOverWhite) {
  // A fully transparent first frame in an animated WebP comes out white.
  const std::string webp = testing::make_file(
      "transparent.webp",
      "-f lavfi -i color=c=black:s=32x24:r=5:d=0.6,format=rgba,fade=in:st=0:d=0.6:alpha=1 "
      "-c:v libwebp_anim -lossless 1 -loop 0");
  VideoSource video = VideoSource::open(webp);
  const auto frames = video.frames_at({0});
  const auto colour = testing::colour_at(frames[0].image, 16, 12);
  EXPECT_EQ(colour, (std::vector<int>{255, 255, 255}));
}

}  // namespace
}  // namespace qvl::media
