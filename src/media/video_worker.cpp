// Video decoding in the media worker: the parent's side. open() runs the video_info job (the
// child opens the container and builds the frame table); each frame request runs the
// video_frames job, whose child opens the file again and sends the frames back, resized there
// when the request asks for a size, so only what the model needs crosses the process boundary.
// (sample_video's video_sampled job does both in one launch through run_video_worker_job.)
// The child decodes under the same VideoLimits (its own clear errors) and the worker's limits
// (address space, CPU time, wall clock, output bytes) hold even if a library misbehaves.
#include <algorithm>
#include <string>

#include "base/error.h"
#include "media/media_worker.h"
#include "media/video_jobs.h"

namespace qvl::media {
namespace {

constexpr const char* kLabel = "decoding the video";
// The child's own deadline fires first; the parent's kill waits this much longer, so that the
// request gets the child's message rather than a killed process.
constexpr double kWallGraceSeconds = 1.0;

}  // namespace

std::vector<WorkerFrame> run_video_worker_job(
    const char* job, std::string_view bytes, const VideoLimits& limits,
    const DecodeDeadline& deadline, const std::function<std::string(const VideoLimits&)>& params,
    uint64_t output_bytes) {
  deadline.check();
  VideoLimits child = limits;
  child.max_decode_seconds = std::max(deadline.remaining_seconds(), 1e-3);
  WorkerLimits worker;
  worker.memory_bytes = limits.max_memory_bytes;
  worker.cpu_seconds = child.max_decode_seconds + kWallGraceSeconds;
  worker.wall_seconds = child.max_decode_seconds + kWallGraceSeconds;
  worker.output_bytes = output_bytes;
  try {
    return run_worker_job(job, params(child), bytes, worker, kLabel);
  } catch (const Error& e) {
    // A child that died without reporting (a decoder crash on hostile input) is the file's
    // fault as far as the client is concerned; the limits' own errors pass through.
    if (e.code() == ErrorCode::kInternal) {
      fail(ErrorCode::kCorrupt,
           std::string("the video decoder failed on this file (") + e.what() + ")");
    }
    throw;
  }
}

namespace {

class WorkerVideo final : public VideoSource::Decoder {
 public:
  WorkerVideo(std::string bytes, const VideoLimits& limits)
      : bytes_(std::move(bytes)), limits_(limits), deadline_(limits.max_decode_seconds) {
    const auto frames = run(kVideoInfoJob, nullptr, 64 << 10);
    if (frames.size() != 1) fail(ErrorCode::kInternal, "video worker: expected one info frame");
    info_ = decode_video_info_frame(frames[0]);
    if (info_.frame_count < 1 || info_.width < 1 || info_.height < 1) {
      fail(ErrorCode::kInternal, "video worker: an empty video passed its checks");
    }
  }

  const VideoInfo& info() const override { return info_; }

  void decode(const FrameRequest& request, const std::function<void(VideoFrame&&)>& sink) override {
    check_output_bytes(request, info_, limits_);
    const int width = request.width > 0 ? request.width : info_.width;
    const int height = request.width > 0 ? request.height : info_.height;
    const uint64_t frame_bytes = kVideoFrameHeadSize + uint64_t(width) * uint64_t(height) * 3;
    const auto frames = run(kVideoFramesJob, &request, frame_bytes * request.indices.size() + 4096);
    if (frames.size() != request.indices.size()) {
      fail(ErrorCode::kInternal, "video worker: a frame count other than asked for");
    }
    for (size_t i = 0; i < frames.size(); ++i) {
      VideoFrame frame = decode_video_frame(frames[i], width, height);
      if (frame.index != request.indices[i]) {
        fail(ErrorCode::kInternal, "video worker: frames out of order");
      }
      sink(std::move(frame));
    }
  }

 private:
  std::vector<WorkerFrame> run(const char* job, const FrameRequest* request,
                               uint64_t output_bytes) {
    return run_video_worker_job(
        job, bytes_, limits_, deadline_,
        [&](const VideoLimits& child) { return encode_video_job_params(child, request); },
        output_bytes);
  }

  std::string bytes_;
  VideoLimits limits_;
  DecodeDeadline deadline_;
  VideoInfo info_;
};

}  // namespace

VideoDecoderPtr open_video_in_worker(std::string bytes, const VideoLimits& limits) {
  return std::make_unique<WorkerVideo>(std::move(bytes), limits);
}

}  // namespace qvl::media
