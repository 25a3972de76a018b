// Bad video input: every case is a qvl::Error with a one-line message naming the problem (or, for
// damage the codecs conceal, frames of the right size), never a crash or a hang. The sanitizer
// build runs these too.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "base/error.h"
#include "media/video_clips.h"
#include "media/video_source.h"

namespace qvl::media {
namespace {

class VideoHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!video_supported()) GTEST_SKIP() << "built with QVL_VIDEO=OFF";
  }
};

// The bulk cases decode in process (each media worker start costs a process launch); the named
// errors go through the worker, as the server's requests do.
VideoLimits in_process() {
  VideoLimits limits;
  limits.isolation = VideoIsolation::kInProcess;
  return limits;
}

// Opens and decodes every frame; returns the error, or "" when the file decoded.
ErrorCode decode_all(const std::string& bytes, std::string& message,
                     const VideoLimits& limits = {}) {
  try {
    VideoSource video = VideoSource::open(bytes, limits);
    std::vector<int64_t> all;
    const int64_t count = std::min<int64_t>(video.info().frame_count, limits.max_frames);
    for (int64_t k = 0; k < count; ++k) all.push_back(k);
    for (const VideoFrame& frame : video.frames_at(all)) {
      EXPECT_EQ(frame.image.width, video.info().width);
      EXPECT_EQ(frame.image.pixels.size(), size_t(frame.image.width) * frame.image.height * 3);
    }
    message.clear();
    return ErrorCode::kInternal;  // "no error" for the callers below
  } catch (const Error& e) {
    message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(e.code(), ErrorCode::kInternal) << message;
    return e.code();
  }
}

void expect_error(const std::string& bytes, ErrorCode code, const std::string& words,
                  const VideoLimits& limits = {}) {
  std::string message;
  const ErrorCode got = decode_all(bytes, message, limits);
  ASSERT_FALSE(message.empty()) << "decoded without an error; expected: " << words;
  EXPECT_EQ(got, code) << message;
  EXPECT_NE(message.find(words), std::string::npos) << message;
}

// The offset of a box type in an MP4 file (the first occurrence), or npos.
size_t find_box(const std::string& bytes, const char* type) {
  return bytes.find(type);
}

void put_be16(std::string& bytes, size_t at, uint16_t value) {
  bytes[at] = char(value >> 8);
  bytes[at + 1] = char(value & 0xFF);
}
void put_be32(std::string& bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = char((value >> (24 - 8 * i)) & 0xFF);
}

TEST_F(VideoHostile, EmptyAndOversizedInput) {
  expect_error("", ErrorCode::kInvalidArgument, "empty");
  VideoLimits limits;
  limits.max_bytes = 1000;
  expect_error(testing::make_clip(testing::mp4_h264()), ErrorCode::kResourceExhausted,
               "above the limit of 1000", limits);
}

TEST_F(VideoHostile, NotAVideo) {
  expect_error(std::string(4096, 'x'), ErrorCode::kInvalidArgument, "not a video");
  const std::string png = testing::make_file("still.png",
                                             "-f lavfi -i color=c=red:s=32x24 "
                                             "-frames:v 1");
  expect_error(png, ErrorCode::kInvalidArgument, "still image (png)");
  const std::string jpeg = testing::make_file("still.jpg",
                                              "-f lavfi -i color=c=red:s=32x24 "
                                              "-frames:v 1");
  expect_error(jpeg, ErrorCode::kInvalidArgument, "still image");
  const std::string webp = testing::make_file("still.webp",
                                              "-f lavfi -i color=c=red:s=32x24 "
                                              "-frames:v 1 -c:v libwebp");
  expect_error(webp, ErrorCode::kInvalidArgument, "still image (webp)");
}

TEST_F(VideoHostile, NoVideoStreamOrUnsupportedCodec) {
  const std::string audio = testing::make_file("audio.m4a", "-f lavfi -i sine=d=0.5 -c:a aac");
  expect_error(audio, ErrorCode::kInvalidArgument, "no video stream");
  const std::string mjpeg = testing::make_file(
      "mjpeg.mkv", "-f lavfi -i testsrc=s=32x24:r=5:d=0.4 -c:v mjpeg -pix_fmt yuvj420p");
  expect_error(mjpeg, ErrorCode::kUnsupported, "codec mjpeg is not supported");
  const std::string avi =
      testing::make_file("clip.avi", "-f lavfi -i testsrc=s=32x24:r=5:d=0.4 -c:v mpeg4");
  expect_error(avi, ErrorCode::kUnsupported, "format is not supported");
}

TEST_F(VideoHostile, TruncatedAtManyOffsets) {
  // moov after mdat (ffmpeg's default): most cuts lose the index; a faststart file keeps it.
  for (const std::string name : {"h264.mp4", "faststart.mp4"}) {
    std::string bytes = testing::make_clip(testing::mp4_h264());
    if (name == std::string("faststart.mp4")) {
      bytes = testing::make_file(name, "-i '" + testing::clip_path(testing::mp4_h264()).string() +
                                           "' -c copy -movflags +faststart");
    }
    for (size_t cut = 1; cut < bytes.size(); cut += bytes.size() / 29 + 1) {
      std::string message;
      decode_all(bytes.substr(0, cut), message, in_process());  // an error or fewer frames
    }
  }
  for (const auto& spec : {testing::webm_vp9(), testing::gif_clip(), testing::webp_clip()}) {
    const std::string bytes = testing::make_clip(spec);
    for (size_t cut = 1; cut < bytes.size(); cut += bytes.size() / 23 + 1) {
      std::string message;
      decode_all(bytes.substr(0, cut), message, in_process());
    }
  }
  expect_error(testing::make_clip(testing::mp4_h264()).substr(0, 2000), ErrorCode::kCorrupt,
               "damaged or truncated");
}

TEST_F(VideoHostile, RandomByteDamage) {
  std::mt19937 random(35);
  for (const auto& spec : {testing::mp4_h264(), testing::mkv_h264(), testing::webm_vp8(),
                           testing::gif_clip(), testing::webp_clip()}) {
    const std::string clean = testing::make_clip(spec);
    for (int trial = 0; trial < 12; ++trial) {
      std::string bytes = clean;
      const int hits = 1 + int(random() % 16);
      for (int i = 0; i < hits; ++i) bytes[random() % bytes.size()] = char(random());
      std::string message;
      decode_all(bytes, message, in_process());
    }
  }
}

TEST_F(VideoHostile, HugeDeclaredDimensions) {
  std::string bytes = testing::make_clip(testing::mp4_h264());
  // The sample entry inside stsd (ftyp also names the avc1 brand).
  const size_t entry = bytes.find("avc1", find_box(bytes, "stsd"));
  ASSERT_NE(entry, std::string::npos);
  put_be16(bytes, entry + 28, 60000);  // the sample entry's width and height
  put_be16(bytes, entry + 30, 60000);
  expect_error(bytes, ErrorCode::kResourceExhausted, "60000x60000");
  // Decompression bombs: a few KB declaring a huge canvas, refused before anything is allocated.
  std::string gif = testing::make_clip(testing::gif_clip());
  gif[6] = gif[8] = char(0x80);  // logical screen 16000x16000 (little-endian 0x3E80)
  gif[7] = gif[9] = char(0x3E);
  expect_error(gif, ErrorCode::kResourceExhausted, "16000x16000");
  std::string webp = testing::make_clip(testing::webp_clip());
  ASSERT_EQ(webp.substr(12, 4), "VP8X");
  for (const int at : {24, 27}) {  // canvas width - 1 and height - 1, 24-bit little-endian
    webp[at] = char(0xDF);         // 11999: a 12000x12000 canvas
    webp[at + 1] = char(0x2E);
    webp[at + 2] = 0;
  }
  expect_error(webp, ErrorCode::kResourceExhausted, "12000x12000");
}

TEST_F(VideoHostile, FramesAbovePixelLimit) {
  VideoLimits limits;
  limits.max_frame_pixels = 32 * 32;
  expect_error(testing::make_clip(testing::mp4_h264()), ErrorCode::kResourceExhausted,
               "64x48 exceed the limit of 1024 pixels", limits);
  expect_error(testing::make_clip(testing::webp_clip()), ErrorCode::kResourceExhausted,
               "64x48 exceed", limits);
}

TEST_F(VideoHostile, DeclaredDurationAboveLimit) {
  // The container's declared duration is checked before the packet pass.
  VideoLimits limits;
  limits.max_duration_s = 1.25;
  expect_error(testing::make_clip(testing::mp4_h264()), ErrorCode::kResourceExhausted,
               "above the limit of 1.25 s", limits);
  expect_error(testing::make_clip(testing::mkv_h264()), ErrorCode::kResourceExhausted,
               "above the limit of 1.25 s", limits);
  expect_error(testing::make_clip(testing::webp_clip()), ErrorCode::kResourceExhausted,
               "above the limit of 1.25 s", limits);
  // A media header claiming 40 million seconds: an error, or (FFmpeg trims the frames to the
  // edit list) a video within the limit.
  std::string bytes = testing::make_clip(testing::mp4_h264());
  const size_t mdhd = find_box(bytes, "mdhd");
  ASSERT_NE(mdhd, std::string::npos);
  put_be32(bytes, mdhd + 16, 1);         // timescale: 1 tick per second
  put_be32(bytes, mdhd + 20, 40000000);  // duration
  try {
    VideoSource video = VideoSource::open(bytes);
    EXPECT_LE(video.info().duration_s, VideoLimits{}.max_duration_s);
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::kResourceExhausted || e.code() == ErrorCode::kCorrupt)
        << e.what();
  }
}

TEST_F(VideoHostile, HeaderClaimingMillionsOfFrames) {
  std::string bytes = testing::make_clip(testing::mp4_h264());
  const size_t stsz = find_box(bytes, "stsz");
  ASSERT_NE(stsz, std::string::npos);
  put_be32(bytes, stsz + 4 + 4 + 4, 50'000'000);  // sample_count
  std::string message;
  decode_all(bytes, message);
  ASSERT_FALSE(message.empty());
}

TEST_F(VideoHostile, DecodeTimeLimit) {
  VideoLimits limits;
  limits.max_decode_seconds = 1e-9;
  expect_error(testing::make_clip(testing::mp4_h264()), ErrorCode::kResourceExhausted,
               "took longer than the limit", limits);
  expect_error(testing::make_clip(testing::webp_clip()), ErrorCode::kResourceExhausted,
               "took longer than the limit", limits);
}

TEST_F(VideoHostile, BadFrameRequests) {
  VideoSource video = VideoSource::open(testing::make_clip(testing::mp4_h264()));
  auto expect_request_error = [&](const std::vector<int64_t>& indices, ErrorCode code,
                                  const std::string& words) {
    try {
      video.frames_at(indices);
      ADD_FAILURE() << "no error; expected " << words;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_request_error({}, ErrorCode::kInvalidArgument, "no video frames");
  expect_request_error({3, 2}, ErrorCode::kInvalidArgument, "ascending");
  expect_request_error({25}, ErrorCode::kInvalidArgument, "outside the video's 25 frames");
  expect_request_error({-1}, ErrorCode::kInvalidArgument, "outside");
  std::vector<int64_t> many(769, 0);
  expect_request_error(many, ErrorCode::kResourceExhausted, "above the limit of 768");
}

// A build with QVL_VIDEO=OFF answers every video with one clear error (ON builds skip this).
TEST(VideoBuild, WithoutVideoSupportTheErrorSaysSo) {
  if (video_supported()) GTEST_SKIP() << "built with QVL_VIDEO=ON";
  try {
    VideoSource::open(std::string(100, 'x'));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("built without video support"), std::string::npos);
  }
}

}  // namespace
}  // namespace qvl::media
