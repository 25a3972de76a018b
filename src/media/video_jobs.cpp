// The media worker's video jobs (video_jobs.h).
#include "media/video_jobs.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "media/video_sampled.h"
#include "media/worker_frames.h"

namespace qvl::media {
namespace {

using nlohmann::json;

json limits_json(const VideoLimits& limits) {
  return {{"max_bytes", limits.max_bytes},
          {"max_duration_s", limits.max_duration_s},
          {"max_frames", limits.max_frames},
          {"max_frame_pixels", limits.max_frame_pixels},
          {"max_decode_seconds", limits.max_decode_seconds},
          {"max_output_bytes", limits.max_output_bytes},
          {"decoder_threads", limits.decoder_threads}};
}

VideoLimits limits_from_json(const json& j) {
  VideoLimits limits;
  limits.max_bytes = j.at("max_bytes").get<size_t>();
  limits.max_duration_s = j.at("max_duration_s").get<double>();
  limits.max_frames = j.at("max_frames").get<int64_t>();
  limits.max_frame_pixels = j.at("max_frame_pixels").get<uint64_t>();
  limits.max_decode_seconds = j.at("max_decode_seconds").get<double>();
  limits.max_output_bytes = j.at("max_output_bytes").get<uint64_t>();
  limits.decoder_threads = j.at("decoder_threads").get<int>();
  limits.isolation = VideoIsolation::kInProcess;  // this is the worker
  return limits;
}

// What the child needs of the processor's configuration to choose the frames and their size.
json sampling_json(const VideoPreprocessConfig& c) {
  return {{"fps", c.sampling.fps},
          {"min_frames", c.sampling.min_frames},
          {"max_frames", c.sampling.max_frames},
          {"patch_size", c.layout.patch_size},
          {"merge_size", c.layout.merge_size},
          {"temporal_patch_size", c.layout.temporal_patch_size},
          {"min_pixels", c.min_pixels},
          {"max_pixels", c.max_pixels}};
}

VideoPreprocessConfig sampling_from_json(const json& j) {
  VideoPreprocessConfig c;
  c.sampling.fps = j.at("fps").get<double>();
  c.sampling.min_frames = j.at("min_frames").get<int64_t>();
  c.sampling.max_frames = j.at("max_frames").get<int64_t>();
  c.layout.patch_size = j.at("patch_size").get<int>();
  c.layout.merge_size = j.at("merge_size").get<int>();
  c.layout.temporal_patch_size = j.at("temporal_patch_size").get<int>();
  c.min_pixels = j.at("min_pixels").get<int64_t>();
  c.max_pixels = j.at("max_pixels").get<int64_t>();
  return c;
}

json info_json(const VideoInfo& info) {
  return {{"frame_count", info.frame_count},
          {"fps", info.fps},
          {"duration_s", info.duration_s},
          {"width", info.width},
          {"height", info.height},
          {"rotation_degrees", info.rotation_degrees},
          {"container", info.container},
          {"codec", info.codec},
          {"frame_count_source", info.frame_count_source}};
}

void write_frame(WorkerOutput& out, int64_t index, double time_s, const RgbImage& image) {
  std::string head;
  frames::put_u64(head, static_cast<uint64_t>(index));
  uint64_t time_bits = 0;
  std::memcpy(&time_bits, &time_s, sizeof time_bits);
  frames::put_u64(head, time_bits);
  frames::put_u32(head, static_cast<uint32_t>(image.width));
  frames::put_u32(head, static_cast<uint32_t>(image.height));
  out.write(
      video_tags::kFrame, head,
      std::string_view(reinterpret_cast<const char*>(image.pixels.data()), image.pixels.size()));
}

json parse_params(std::string_view params) {
  try {
    return json::parse(params);
  } catch (const json::exception& e) {
    fail(ErrorCode::kInternal, std::string("video job parameters: ") + e.what());
  }
}

[[noreturn]] void bad_answer(const char* what) {
  fail(ErrorCode::kInternal, std::string("video worker: ") + what);
}

}  // namespace

std::string encode_video_job_params(const VideoLimits& limits, const FrameRequest* request,
                                    const VideoPreprocessConfig* sampling) {
  json params = {{"limits", limits_json(limits)}};
  if (request) {
    params["indices"] = request->indices;
    params["width"] = request->width;
    params["height"] = request->height;
  }
  if (sampling) params["sampling"] = sampling_json(*sampling);
  return params.dump();
}

VideoInfo decode_video_info_frame(const WorkerFrame& frame) {
  if (frame.tag != video_tags::kInfo) bad_answer("expected the video's info");
  try {
    const json j = json::parse(frame.bytes);
    VideoInfo info;
    info.frame_count = j.at("frame_count").get<int64_t>();
    info.fps = j.at("fps").get<double>();
    info.duration_s = j.at("duration_s").get<double>();
    info.width = j.at("width").get<int>();
    info.height = j.at("height").get<int>();
    info.rotation_degrees = j.at("rotation_degrees").get<int>();
    info.container = j.at("container").get<std::string>();
    info.codec = j.at("codec").get<std::string>();
    info.frame_count_source = j.at("frame_count_source").get<std::string>();
    return info;
  } catch (const json::exception&) {
    bad_answer("malformed video info");
  }
}

FrameRequest decode_video_plan_frame(const WorkerFrame& frame) {
  if (frame.tag != video_tags::kPlan) bad_answer("expected the sampled frames");
  try {
    const json j = json::parse(frame.bytes);
    FrameRequest plan;
    plan.indices = j.at("indices").get<std::vector<int64_t>>();
    plan.width = j.at("width").get<int>();
    plan.height = j.at("height").get<int>();
    if (plan.width < 1 || plan.height < 1) bad_answer("an empty frame size");
    return plan;
  } catch (const json::exception&) {
    bad_answer("malformed sampled frames");
  }
}

VideoFrame decode_video_frame(const WorkerFrame& frame, int width, int height) {
  if (frame.tag != video_tags::kFrame || frame.bytes.size() < kVideoFrameHeadSize) {
    bad_answer("expected a video frame");
  }
  const char* head = frame.bytes.data();
  VideoFrame out;
  out.index = static_cast<int64_t>(frames::get_u64(head));
  const uint64_t time_bits = frames::get_u64(head + 8);
  std::memcpy(&out.time_s, &time_bits, sizeof out.time_s);
  out.image.width = static_cast<int>(frames::get_u32(head + 16));
  out.image.height = static_cast<int>(frames::get_u32(head + 20));
  if (out.image.width != width || out.image.height != height ||
      frame.bytes.size() != kVideoFrameHeadSize + size_t(width) * size_t(height) * 3) {
    bad_answer("a video frame of the wrong size");
  }
  out.image.pixels.assign(frame.bytes.begin() + kVideoFrameHeadSize, frame.bytes.end());
  return out;
}

void run_video_info_job(std::string_view params, std::string_view input, WorkerOutput& out) {
  const json p = parse_params(params);
  const VideoLimits limits = limits_from_json(p.at("limits"));
  const VideoDecoderPtr video = open_video_in_process(std::string(input), limits);
  const json answer = info_json(video->info());
  out.write(video_tags::kInfo, answer.dump());
}

void run_video_frames_job(std::string_view params, std::string_view input, WorkerOutput& out) {
  const json p = parse_params(params);
  const VideoLimits limits = limits_from_json(p.at("limits"));
  FrameRequest request;
  request.indices = p.at("indices").get<std::vector<int64_t>>();
  request.width = p.at("width").get<int>();
  request.height = p.at("height").get<int>();
  const VideoDecoderPtr video = open_video_in_process(std::string(input), limits);
  validate_frame_request(request, video->info(), limits);
  video->decode(request, [&](VideoFrame&& frame) {
    write_frame(out, frame.index, frame.time_s, frame.image);
  });
}

void run_video_sampled_job(std::string_view params, std::string_view input, WorkerOutput& out) {
  const json p = parse_params(params);
  const SampledVideo video = sample_video(std::string(input), limits_from_json(p.at("limits")),
                                          sampling_from_json(p.at("sampling")));
  out.write(video_tags::kInfo, info_json(video.info).dump());
  const int width = video.frames.empty() ? 0 : video.frames.front().width;
  const int height = video.frames.empty() ? 0 : video.frames.front().height;
  out.write(video_tags::kPlan,
            json{{"indices", video.indices}, {"width", width}, {"height", height}}.dump());
  for (size_t i = 0; i < video.frames.size(); ++i) {  // the processor needs no frame times
    write_frame(out, video.indices[i], 0, video.frames[i]);
  }
}

}  // namespace qvl::media
