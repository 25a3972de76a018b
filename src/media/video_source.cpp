// VideoSource: validates the limits and the caller's frame indices, picks the decoder by the
// file's first bytes and keeps one decode deadline for the source's whole life.
#include "media/video_source.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/error.h"
#include "image/resize.h"
#include "media/video_decoder.h"

namespace qvl::media {
namespace {

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

void validate_limits(const VideoLimits& limits) {
  if (limits.max_bytes == 0 || !(limits.max_duration_s > 0) || limits.max_frames < 1 ||
      limits.max_frame_pixels == 0 || !(limits.max_decode_seconds > 0) ||
      limits.max_output_bytes == 0 || limits.max_memory_bytes == 0 || limits.decoder_threads < 1 ||
      limits.decoder_threads > 16) {
    fail(ErrorCode::kInvalidArgument,
         "video limits must be positive (decoder threads between 1 and 16)");
  }
}

}  // namespace

void DecodeDeadline::check() const {
  if (passed()) {
    fail(ErrorCode::kResourceExhausted,
         "decoding the video took longer than the limit of " + seconds_text(seconds_));
  }
}

bool looks_like_webp(const std::string& bytes) {
  return bytes.size() >= 12 && std::memcmp(bytes.data(), "RIFF", 4) == 0 &&
         std::memcmp(bytes.data() + 8, "WEBP", 4) == 0;
}

void check_frame_size(int64_t width, int64_t height, const VideoLimits& limits) {
  if (width <= 0 || height <= 0) {
    fail(ErrorCode::kCorrupt, "the video stream declares no frame size");
  }
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  if (width > kMaxFrameSide || height > kMaxFrameSide) {
    fail(ErrorCode::kResourceExhausted, "video frames of " + size + " exceed the largest side of " +
                                            std::to_string(kMaxFrameSide));
  }
  if (static_cast<uint64_t>(width) * static_cast<uint64_t>(height) > limits.max_frame_pixels) {
    fail(ErrorCode::kResourceExhausted, "video frames of " + size + " exceed the limit of " +
                                            std::to_string(limits.max_frame_pixels) +
                                            " pixels per frame");
  }
}

void check_duration(double seconds, const VideoLimits& limits) {
  if (!std::isfinite(seconds) || seconds > limits.max_duration_s) {
    fail(ErrorCode::kResourceExhausted, "the video lasts " + seconds_text(seconds) +
                                            ", above the limit of " +
                                            seconds_text(limits.max_duration_s));
  }
}

void check_stream_frames(int64_t frames) {
  if (frames < 1) fail(ErrorCode::kCorrupt, "the video stream has no frames");
  if (frames > kMaxStreamFrames) {
    fail(ErrorCode::kResourceExhausted,
         "the video stream has more than " + std::to_string(kMaxStreamFrames) + " frames");
  }
}

void validate_frame_request(const FrameRequest& request, const VideoInfo& info,
                            const VideoLimits& limits) {
  const std::vector<int64_t>& indices = request.indices;
  if (request.width != 0 || request.height != 0) {
    if (request.width < 1 || request.height < 1 || request.width > kMaxFrameSide ||
        request.height > kMaxFrameSide) {
      fail(ErrorCode::kInvalidArgument, "video frames cannot be resized to " +
                                            std::to_string(request.width) + "x" +
                                            std::to_string(request.height));
    }
  }
  if (indices.empty()) fail(ErrorCode::kInvalidArgument, "no video frames were asked for");
  if (static_cast<int64_t>(indices.size()) > limits.max_frames) {
    fail(ErrorCode::kResourceExhausted, std::to_string(indices.size()) +
                                            " video frames were asked for, above the limit of " +
                                            std::to_string(limits.max_frames));
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= info.frame_count) {
      fail(ErrorCode::kInvalidArgument, "video frame index " + std::to_string(indices[i]) +
                                            " is outside the video's " +
                                            std::to_string(info.frame_count) + " frames");
    }
    if (i > 0 && indices[i] < indices[i - 1]) {
      fail(ErrorCode::kInvalidArgument, "video frame indices must be in ascending order");
    }
  }
}

void check_output_bytes(const FrameRequest& request, const VideoInfo& info,
                        const VideoLimits& limits) {
  const int width = request.width > 0 ? request.width : info.width;
  const int height = request.width > 0 ? request.height : info.height;
  const uint64_t bytes = uint64_t(width) * uint64_t(height) * 3 * request.indices.size();
  if (bytes > limits.max_output_bytes) {
    fail(ErrorCode::kResourceExhausted,
         std::to_string(request.indices.size()) + " frames of " + std::to_string(width) + "x" +
             std::to_string(height) + " exceed the limit of " +
             std::to_string(limits.max_output_bytes) + " bytes of decoded frames");
  }
}

VideoSource::VideoSource(std::unique_ptr<Decoder> decoder, const VideoLimits& limits)
    : decoder_(std::move(decoder)), limits_(limits) {}
VideoSource::VideoSource(VideoSource&&) noexcept = default;
VideoSource& VideoSource::operator=(VideoSource&&) noexcept = default;
VideoSource::~VideoSource() = default;

VideoDecoderPtr open_video_in_process(std::string bytes, const VideoLimits& limits) {
#if QVL_HAS_VIDEO
  auto deadline = std::make_shared<const DecodeDeadline>(limits.max_decode_seconds);
  if (looks_like_webp(bytes)) {
    return open_webp_animation(std::move(bytes), limits, std::move(deadline));
  }
  return open_ffmpeg_video(std::move(bytes), limits, std::move(deadline));
#else
  (void)bytes;
  (void)limits;
  fail(ErrorCode::kUnsupported, "this qvl was built without video support (QVL_VIDEO=OFF)");
#endif
}

void check_before_open(const std::string& bytes, const VideoLimits& limits) {
  validate_limits(limits);
  if (!video_supported()) {
    fail(ErrorCode::kUnsupported, "this qvl was built without video support (QVL_VIDEO=OFF)");
  }
  if (bytes.empty()) fail(ErrorCode::kInvalidArgument, "the video file is empty");
  if (bytes.size() > limits.max_bytes) {
    fail(ErrorCode::kResourceExhausted, "the video file has " + std::to_string(bytes.size()) +
                                            " bytes, above the limit of " +
                                            std::to_string(limits.max_bytes));
  }
}

VideoSource VideoSource::open(std::string bytes, const VideoLimits& limits) {
  check_before_open(bytes, limits);
  if (limits.isolation == VideoIsolation::kWorker) {
    return VideoSource(open_video_in_worker(std::move(bytes), limits), limits);
  }
  return VideoSource(open_video_in_process(std::move(bytes), limits), limits);
}

const VideoInfo& VideoSource::info() const {
  return decoder_->info();
}

std::vector<VideoFrame> VideoSource::frames_at(const std::vector<int64_t>& indices) {
  return resized_frames_at(indices, 0, 0);
}

std::vector<VideoFrame> VideoSource::resized_frames_at(const std::vector<int64_t>& indices,
                                                       int width, int height) {
  const FrameRequest request{indices, width, height};
  validate_frame_request(request, info(), limits_);
  check_output_bytes(request, info(), limits_);
  std::vector<VideoFrame> frames;
  frames.reserve(indices.size());
  decoder_->decode(request, [&](VideoFrame&& frame) { frames.push_back(std::move(frame)); });
  return frames;
}

void VideoSource::for_each_frame(const std::vector<int64_t>& indices,
                                 const std::function<void(VideoFrame&&)>& sink) {
  const FrameRequest request{indices, 0, 0};
  validate_frame_request(request, info(), limits_);
  decoder_->decode(request, sink);
}

RgbImage fit_to_request(RgbImage image, const FrameRequest& request) {
  if (request.width <= 0) return image;
  return resize_bicubic(image, request.width, request.height);
}

bool video_supported() {
  return QVL_HAS_VIDEO != 0;
}

}  // namespace qvl::media
