// Video decoding of untrusted bytes (MP4/MOV, WebM, MKV, animated GIF and WebP) into RGB frames
// chosen by index, under byte, duration, frame, pixel and time limits (docs/video.md).
//
// The caller (the video processor) first reads info() to choose frame indices exactly as
// transformers does (it needs the frame count and the fps), then asks for those frames. Decoding
// is a pure function of the bytes, the limits and the indices, so it can run in the sandboxed
// media worker as well as in process.
//
// Errors are qvl::Error with a one-line message naming the problem:
//   kInvalidArgument   empty input, not a video container qvl knows, no video stream
//   kUnsupported       a codec this build cannot decode, or video support compiled out
//   kCorrupt           damaged or truncated container or bitstream, zero-length stream
//   kResourceExhausted a limit was hit (bytes, duration, frames, pixels, decode time)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "image/rgb_image.h"

namespace qvl::media {

// Where the untrusted bytes are parsed. kWorker (the default) runs FFmpeg in the media worker, a
// child process with its own address-space, CPU and wall-clock limits (media_worker.h), so a
// decoder crash or blow-up costs one request, never the server; it needs the executable's main()
// to call run_worker_if_requested() (qvl and the media/engine/eval/server test binaries do).
// kInProcess decodes on the calling thread under the same limits but no memory limit (fuzzing,
// tests of the decoder itself, tools).
enum class VideoIsolation { kWorker, kInProcess };

struct VideoLimits {
  size_t max_bytes = size_t{256} << 20;           // the encoded file
  double max_duration_s = 3600;                   // as declared by the container, and as decoded
  int64_t max_frames = 768;                       // frames handed out per call (transformers' cap)
  uint64_t max_frame_pixels = 4096 * 4096;        // width * height of one frame, from the header
  double max_decode_seconds = 60;                 // wall clock for open() plus every decode call
  uint64_t max_output_bytes = uint64_t{2} << 30;  // RGB bytes one frames_at() call may return
  int decoder_threads = 1;                        // threads the codec may use for one video
  uint64_t max_memory_bytes = uint64_t{1} << 30;  // the media worker's address space
  VideoIsolation isolation = VideoIsolation::kWorker;
};

struct VideoInfo {
  int64_t frame_count = 0;  // frames in the stream (see frame_count_source)
  double fps = 0;           // average frames per second
  double duration_s = 0;    // of the video stream
  int width = 0;            // after rotation
  int height = 0;
  int rotation_degrees = 0;  // clockwise rotation applied to every frame: 0, 90, 180 or 270
  std::string container;     // "mp4", "webm", "matroska", "gif", "webp", ...
  std::string codec;         // "h264", "vp9", "av1", "gif", "webp", ...
  // Where frame_count comes from. It is always the number of frames the container really holds
  // (FFmpeg: one pass over the stream's packets at open, no decoding; animated WebP: its frame
  // chunks): "header" when that equals the count the container declares, "counted" when the
  // container declares none (Matroska, GIF) or a different one (a truncated file).
  std::string frame_count_source;
};

struct VideoFrame {
  RgbImage image;     // rotation applied; width x height as in VideoInfo
  int64_t index = 0;  // the index that was asked for
  double time_s = 0;  // presentation time of the decoded frame, from the stream start
};

class VideoSource {
 public:
  // Opens the container over the bytes (kept in memory, never a path) and reads the stream
  // header; checks every limit the header allows before any frame is decoded.
  static VideoSource open(std::string bytes, const VideoLimits& limits = {});

  VideoSource(VideoSource&&) noexcept;
  VideoSource& operator=(VideoSource&&) noexcept;
  ~VideoSource();

  const VideoInfo& info() const;

  // Frames at the given indices, ascending (repeats allowed), each in [0, frame_count). Index k is
  // the k-th frame in presentation order (as PyAV, decord and torchcodec number them), found by
  // its timestamp, so variable frame rates need no assumption. A frame the decoder cannot
  // produce (damaged data) is replaced by the next one it can, or the last one. Seeks to the
  // keyframe before the first wanted frame when the container allows it, then decodes forward.
  std::vector<VideoFrame> frames_at(const std::vector<int64_t>& indices);

  // Frames at `indices` (as frames_at), each resized to width x height by resize_bicubic
  // (image/resize.h: the processor's own resize, so the result equals resizing frames_at's
  // frames) as soon as it is decoded: how the model should read a video, since only one
  // full-size frame exists at a time and, in the media worker, only the resized frames cross back
  // to the server. max_output_bytes applies to the resized frames.
  std::vector<VideoFrame> resized_frames_at(const std::vector<int64_t>& indices, int width,
                                            int height);

  // frames_at handing each frame to `sink` as soon as it is decoded (in process) or received
  // from the media worker (where the whole answer is received first, within max_output_bytes).
  void for_each_frame(const std::vector<int64_t>& indices,
                      const std::function<void(VideoFrame&&)>& sink);

  class Decoder;  // the implementation (FFmpeg or libwebp's animation decoder)

 private:
  VideoSource(std::unique_ptr<Decoder> decoder, const VideoLimits& limits);
  std::unique_ptr<Decoder> decoder_;
  VideoLimits limits_;
};

// True when this qvl was built with video support (QVL_VIDEO=ON); otherwise open() fails with
// kUnsupported "this qvl was built without video support".
bool video_supported();

}  // namespace qvl::media
