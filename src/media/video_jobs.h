// The video jobs of the media worker (media_worker.h): what the parent asks for, the frames the
// child answers with, and the jobs themselves (run in the child, decoding in process there).
//
// video_info: params = the limits (JSON); answers one kInfo frame (VideoInfo as JSON).
// video_frames: params = the limits and the FrameRequest (JSON); answers one kFrame frame per
// requested index, in order: u64 index, u64 time (the double's bits), u32 width, u32 height, RGB.
// video_sampled (video_sampled.h): params = the limits and the processor's sampling; answers
// kInfo, then kPlan (the sampled indices and the frame size, JSON), then kFrame frames.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "image/video_preprocess.h"
#include "media/media_worker.h"
#include "media/video_decoder.h"

namespace qvl::media {

inline constexpr const char* kVideoInfoJob = "video_info";
inline constexpr const char* kVideoFramesJob = "video_frames";
inline constexpr const char* kVideoSampledJob = "video_sampled";

namespace video_tags {
inline constexpr uint8_t kInfo = 1;
inline constexpr uint8_t kFrame = 2;
inline constexpr uint8_t kPlan = 3;
}  // namespace video_tags

inline constexpr size_t kVideoFrameHeadSize = 8 + 8 + 4 + 4;

// Parent side: the job parameters, and the answers read back (kInternal for a malformed answer:
// the child is this same program, so that is a bug, not bad input).
std::string encode_video_job_params(const VideoLimits& limits, const FrameRequest* request,
                                    const VideoPreprocessConfig* sampling = nullptr);
VideoInfo decode_video_info_frame(const WorkerFrame& frame);
FrameRequest decode_video_plan_frame(const WorkerFrame& frame);
VideoFrame decode_video_frame(const WorkerFrame& frame, int width, int height);

// Runs `job` on `bytes` in the media worker within what is left of `deadline`: `params` makes
// the job's parameters from the child's limits (which carry the time left; the parent's kill
// waits a second more, so a slow file gets the child's own message). A child that died without
// reporting is kCorrupt "the video decoder failed on this file (...)"; the limits' own errors
// pass through.
std::vector<WorkerFrame> run_video_worker_job(
    const char* job, std::string_view bytes, const VideoLimits& limits,
    const DecodeDeadline& deadline, const std::function<std::string(const VideoLimits&)>& params,
    uint64_t output_bytes);

// Child side.
void run_video_info_job(std::string_view params, std::string_view input, WorkerOutput& out);
void run_video_frames_job(std::string_view params, std::string_view input, WorkerOutput& out);
void run_video_sampled_job(std::string_view params, std::string_view input, WorkerOutput& out);

}  // namespace qvl::media
