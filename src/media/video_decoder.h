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
  double remaining_seconds() const {
    return std::chrono::duration<double>(end_ - std::chrono::steady_clock::now()).count();
  }

 private:
  double seconds_;
  std::chrono::steady_clock::time_point end_;
};

// Which frames to hand out, and at what size.
struct FrameRequest {
  std::vector<int64_t> indices;  // validated: ascending, in range, at most max_frames
  int width = 0;                 // > 0: each frame resized to width x height (resize_bicubic)
  int height = 0;
};

class VideoSource::Decoder {
 public:
  virtual ~Decoder() = default;
  virtual const VideoInfo& info() const = 0;
  // Hands `sink` one frame per entry of request.indices, in order.
  virtual void decode(const FrameRequest& request,
                      const std::function<void(VideoFrame&&)>& sink) = 0;
};

using VideoDecoderPtr = std::unique_ptr<VideoSource::Decoder>;

// The decoded (upright) frame as the request wants it: resized when it asks for a size.
RgbImage fit_to_request(RgbImage image, const FrameRequest& request);

// What VideoSource::open checks before any byte is parsed: the limits, video support, the byte
// count.
void check_before_open(const std::string& bytes, const VideoLimits& limits);
// Throws kInvalidArgument for indices that are empty, out of order or out of range and for a bad
// size; kResourceExhausted for more indices than limits.max_frames.
void validate_frame_request(const FrameRequest& request, const VideoInfo& info,
                            const VideoLimits& limits);
// Throws kResourceExhausted when the answer's RGB bytes would pass limits.max_output_bytes.
void check_output_bytes(const FrameRequest& request, const VideoInfo& info,
                        const VideoLimits& limits);

// The decoder for these bytes in this process (the limits already validated), or in the media
// worker (video_worker.cpp): the same answers, the parsing done in a sandboxed child.
VideoDecoderPtr open_video_in_process(std::string bytes, const VideoLimits& limits);
VideoDecoderPtr open_video_in_worker(std::string bytes, const VideoLimits& limits);

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
