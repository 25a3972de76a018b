// The video jobs of the media worker (media_worker.h): what the parent asks for, the frames the
// child answers with, and the jobs themselves (run in the child, decoding in process there).
//
// video_info: params = the limits (JSON); answers one kInfo frame (VideoInfo as JSON).
// video_frames: params = the limits and the FrameRequest (JSON); answers one kFrame frame per
// requested index, in order: u64 index, u64 time (the double's bits), u32 width, u32 height, RGB.
#pragma once

#include <string>
#include <string_view>

#include "media/media_worker.h"
#include "media/video_decoder.h"

namespace qvl::media {

inline constexpr const char* kVideoInfoJob = "video_info";
inline constexpr const char* kVideoFramesJob = "video_frames";

namespace video_tags {
inline constexpr uint8_t kInfo = 1;
inline constexpr uint8_t kFrame = 2;
}  // namespace video_tags

inline constexpr size_t kVideoFrameHeadSize = 8 + 8 + 4 + 4;

// Parent side: the job parameters, and the answers read back (kInternal for a malformed answer:
// the child is this same program, so that is a bug, not bad input).
std::string encode_video_job_params(const VideoLimits& limits, const FrameRequest* request);
VideoInfo decode_video_info_frame(const WorkerFrame& frame);
VideoFrame decode_video_frame(const WorkerFrame& frame, int width, int height);

// Child side.
void run_video_info_job(std::string_view params, std::string_view input, WorkerOutput& out);
void run_video_frames_job(std::string_view params, std::string_view input, WorkerOutput& out);

}  // namespace qvl::media
