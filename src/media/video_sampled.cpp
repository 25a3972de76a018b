// sample_video (video_sampled.h): in process, or as the media worker's video_sampled job.
#include "media/video_sampled.h"

#include <algorithm>

#include "base/error.h"
#include "image/video_sampling.h"
#include "media/video_decoder.h"
#include "media/video_jobs.h"

namespace qvl::media {
namespace {

SampledVideo sample_in_process(std::string bytes, const VideoLimits& limits,
                               const VideoPreprocessConfig& config) {
  VideoSource source = VideoSource::open(std::move(bytes), limits);
  SampledVideo out;
  out.info = source.info();
  out.indices = sample_frame_indices(out.info.frame_count, out.info.fps, config.sampling);
  const ImageSize size = video_frame_size(static_cast<int64_t>(out.indices.size()), out.info.width,
                                          out.info.height, config);
  for (VideoFrame& frame : source.resized_frames_at(out.indices, size.width, size.height)) {
    out.frames.push_back(std::move(frame.image));
  }
  return out;
}

// The largest answer the job can give: the resized frames hold at most max_pixels over the
// even-rounded count t_bar, and an odd count k is at most 5/4 of its t_bar (k = 5: t_bar = 4).
uint64_t answer_bytes_bound(const VideoLimits& limits, const VideoPreprocessConfig& config) {
  const uint64_t pixels = static_cast<uint64_t>(config.max_pixels) * 5 / 4;
  const uint64_t frames = static_cast<uint64_t>(config.sampling.max_frames);
  return std::min<uint64_t>(pixels * 3, limits.max_output_bytes) +
         frames * (kVideoFrameHeadSize + 16) + (64 << 10);
}

SampledVideo sample_in_worker(const std::string& bytes, const VideoLimits& limits,
                              const VideoPreprocessConfig& config) {
  const DecodeDeadline deadline(limits.max_decode_seconds);
  const std::vector<WorkerFrame> answer = run_video_worker_job(
      kVideoSampledJob, bytes, limits, deadline,
      [&](const VideoLimits& child) { return encode_video_job_params(child, nullptr, &config); },
      answer_bytes_bound(limits, config));
  if (answer.size() < 2) fail(ErrorCode::kInternal, "video worker: expected the info and plan");
  SampledVideo out;
  out.info = decode_video_info_frame(answer[0]);
  const FrameRequest plan = decode_video_plan_frame(answer[1]);
  if (answer.size() != plan.indices.size() + 2) {
    fail(ErrorCode::kInternal, "video worker: a frame count other than planned");
  }
  out.indices = plan.indices;
  for (size_t i = 0; i < plan.indices.size(); ++i) {
    VideoFrame frame = decode_video_frame(answer[i + 2], plan.width, plan.height);
    if (frame.index != plan.indices[i]) {
      fail(ErrorCode::kInternal, "video worker: frames out of order");
    }
    out.frames.push_back(std::move(frame.image));
  }
  return out;
}

}  // namespace

SampledVideo sample_video(std::string bytes, const VideoLimits& limits,
                          const VideoPreprocessConfig& config) {
  if (limits.isolation == VideoIsolation::kWorker) {
    check_before_open(bytes, limits);
    return sample_in_worker(bytes, limits, config);
  }
  return sample_in_process(std::move(bytes), limits, config);
}

}  // namespace qvl::media
