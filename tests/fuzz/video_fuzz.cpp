// libFuzzer target: arbitrary bytes into the video decoder (in process: the fuzzer must see the
// crash itself, not a worker's report of it) with small limits, then a few frames. Any qvl::Error
// is a fine outcome; crashes, sanitizer reports, leaks, hangs and other exceptions are bugs.
// FFmpeg and libwebp are Debian's uninstrumented builds: the coverage guiding the fuzzer is qvl's
// own code (probing, the frame table, seeking, conversion); the sanitizers still check every
// byte qvl hands them or reads back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "media/video_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qvl::media::VideoLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_frame_pixels = 1 << 18;
  limits.max_frames = 8;
  limits.max_duration_s = 600;
  limits.max_decode_seconds = 3;
  limits.isolation = qvl::media::VideoIsolation::kInProcess;
  try {
    qvl::media::VideoSource video = qvl::media::VideoSource::open(
        std::string(reinterpret_cast<const char*>(data), size), limits);
    const qvl::media::VideoInfo& info = video.info();
    if (info.frame_count < 1 || info.width < 1 || info.height < 1 ||
        uint64_t(info.width) * uint64_t(info.height) > limits.max_frame_pixels || !(info.fps > 0) ||
        !(info.duration_s > 0)) {
      std::abort();
    }
    const int64_t last = info.frame_count - 1;
    const auto frames = video.frames_at({0, last / 2, last / 2, last});
    for (const auto& frame : frames) {
      if (frame.image.width != info.width || frame.image.height != info.height ||
          frame.image.pixels.size() != size_t(info.width) * size_t(info.height) * 3) {
        std::abort();
      }
    }
    video.resized_frames_at({last}, 32, 32);
  } catch (const qvl::Error&) {
  }
  return 0;
}
