// Internal: the decoders behind VideoSource (video_source.h) and what they share: the decode
// deadline, the header checks and the conversion helpers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "media/video_source.h"

namespace qvl::media {

// A stream with more frames than this is refused whatever the limits: the frame table is kept in
// memory (8 bytes a frame) and 1M frames is over 4.5 hours at 60 fps.
inline constexpr int64_t kMaxStreamFrames = 1'000'000;
// Either side of a frame above this is refused before anything is allocated (FFmpeg's own
// codecs cap sides at 16384 or 32768; no camera or screen comes close).
inline constexpr int kMaxFrameSide = 16384;

// The wall-clock budget of one VideoSource: started at open(), shared by every later call.
class DecodeDeadline {
 public:
  explicit DecodeDeadline(double seconds)
      : seconds_(seconds),
        end_(std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                 std::chrono::duration<double>(seconds))) {}
  bool passed() const { return std::chrono::steady_clock::now() > end_; }
  // Throws kResourceExhausted naming the limit once the budget is spent.
  void check() const;
  double seconds() const { return seconds_; }

 private:
  double seconds_;
  std::chrono::steady_clock::time_point end_;
};

class VideoSource::Decoder {
 public:
  virtual ~Decoder() = default;
  virtual const VideoInfo& info() const = 0;
  // Hands `sink` one frame per entry of `indices` (validated: ascending, in range), in order.
  virtual void decode(const std::vector<int64_t>& indices,
                      const std::function<void(VideoFrame&&)>& sink) = 0;
};

using VideoDecoderPtr = std::unique_ptr<VideoSource::Decoder>;

// Container families, told apart by their first bytes (the WebP check is exact; everything else
// goes to FFmpeg's prober).
bool looks_like_webp(const std::string& bytes);

// FFmpeg: MP4/MOV, Matroska/WebM, GIF (video_ffmpeg.cpp). Not built when QVL_VIDEO=OFF.
VideoDecoderPtr open_ffmpeg_video(std::string bytes, const VideoLimits& limits,
                                  std::shared_ptr<const DecodeDeadline> deadline);
// libwebp's animation decoder: animated WebP (video_webp.cpp).
VideoDecoderPtr open_webp_animation(std::string bytes, const VideoLimits& limits,
                                    std::shared_ptr<const DecodeDeadline> deadline);

// Header checks shared by both: sides in [1, kMaxFrameSide] and width * height within the
// limit; duration within the limit; frame count in [1, kMaxStreamFrames].
void check_frame_size(int64_t width, int64_t height, const VideoLimits& limits);
void check_duration(double seconds, const VideoLimits& limits);
void check_stream_frames(int64_t frames);

// The frame turned clockwise by 0, 90, 180 or 270 degrees.
RgbImage rotate_clockwise(RgbImage image, int degrees);

}  // namespace qvl::media
