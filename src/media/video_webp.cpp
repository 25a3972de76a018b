// Animated WebP as video, through libwebp's demuxer and animation decoder (FFmpeg 5.1 cannot
// demux animated WebP). The demuxer checks the whole file and lists the frames and their
// durations without decoding; the animation decoder composes each frame onto the canvas (frames
// may cover part of it and blend with what is below), so frames are decoded in order from the
// first one up to the last wanted one.
#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "image/decode.h"
#include "media/video_decoder.h"

namespace qvl::media {
namespace {

// Browsers show frames declared shorter than this for 100 ms (old encoders wrote 0 for "fast").
constexpr int kMinFrameMs = 11;
constexpr int kShortFrameMs = 100;

struct DemuxFree {
  void operator()(WebPDemuxer* demux) const { WebPDemuxDelete(demux); }
};
struct AnimFree {
  void operator()(WebPAnimDecoder* decoder) const { WebPAnimDecoderDelete(decoder); }
};

class WebpAnimation final : public VideoSource::Decoder {
 public:
  WebpAnimation(std::string bytes, const VideoLimits& limits,
                std::shared_ptr<const DecodeDeadline> deadline)
      : bytes_(std::move(bytes)), limits_(limits), deadline_(std::move(deadline)) {
    const WebPData data{reinterpret_cast<const uint8_t*>(bytes_.data()), bytes_.size()};
    std::unique_ptr<WebPDemuxer, DemuxFree> demux(WebPDemux(&data));
    if (!demux) fail(ErrorCode::kCorrupt, "the WebP file is damaged or truncated");
    if (!(WebPDemuxGetI(demux.get(), WEBP_FF_FORMAT_FLAGS) & ANIMATION_FLAG)) {
      fail(ErrorCode::kInvalidArgument,
           "the file is a still image (webp), not a video: send it as an image");
    }
    const auto width = static_cast<int64_t>(WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_WIDTH));
    const auto height = static_cast<int64_t>(WebPDemuxGetI(demux.get(), WEBP_FF_CANVAS_HEIGHT));
    check_frame_size(width, height, limits_);
    const auto count = static_cast<int64_t>(WebPDemuxGetI(demux.get(), WEBP_FF_FRAME_COUNT));
    check_stream_frames(count);

    // Start times from the frames' durations (the demuxer reads chunk headers only).
    WebPIterator frame;
    if (!WebPDemuxGetFrame(demux.get(), 1, &frame)) {
      fail(ErrorCode::kCorrupt, "the animated WebP file has no readable frames");
    }
    int64_t elapsed_ms = 0;
    do {
      deadline_->check();
      start_ms_.push_back(elapsed_ms);
      elapsed_ms += frame.duration < kMinFrameMs ? kShortFrameMs : frame.duration;
    } while (WebPDemuxNextFrame(&frame));
    WebPDemuxReleaseIterator(&frame);
    if (static_cast<int64_t>(start_ms_.size()) != count) {
      fail(ErrorCode::kCorrupt, "the animated WebP file's frame list is inconsistent");
    }
    info_.frame_count = count;
    info_.frame_count_source = "header";
    info_.duration_s = double(elapsed_ms) / 1000.0;
    check_duration(info_.duration_s, limits_);
    info_.fps = double(count) / info_.duration_s;
    info_.width = static_cast<int>(width);
    info_.height = static_cast<int>(height);
    info_.container = "webp";
    info_.codec = "webp";
  }

  const VideoInfo& info() const override { return info_; }

  void decode(const FrameRequest& request, const std::function<void(VideoFrame&&)>& sink) override {
    const std::vector<int64_t>& indices = request.indices;
    deadline_->check();
    const WebPData data{reinterpret_cast<const uint8_t*>(bytes_.data()), bytes_.size()};
    WebPAnimDecoderOptions options;
    if (!WebPAnimDecoderOptionsInit(&options)) {
      fail(ErrorCode::kInternal, "libwebp's animation decoder has an unexpected version");
    }
    options.color_mode = MODE_RGBA;  // straight alpha, composited over white below
    options.use_threads = 0;
    std::unique_ptr<WebPAnimDecoder, AnimFree> decoder(WebPAnimDecoderNew(&data, &options));
    if (!decoder) fail(ErrorCode::kCorrupt, "the animated WebP file is damaged");
    const size_t pixels = size_t(info_.width) * size_t(info_.height);
    size_t next = 0;
    for (int64_t index = 0; next < indices.size(); ++index) {
      deadline_->check();
      uint8_t* canvas = nullptr;
      int timestamp = 0;
      if (!WebPAnimDecoderHasMoreFrames(decoder.get()) ||
          !WebPAnimDecoderGetNext(decoder.get(), &canvas, &timestamp)) {
        fail(ErrorCode::kCorrupt,
             "frame " + std::to_string(index) + " of the animated WebP file is damaged");
      }
      if (indices[next] != index) continue;
      RgbImage image;
      image.width = info_.width;
      image.height = info_.height;
      image.pixels.resize(pixels * 3);
      for (size_t i = 0; i < pixels; ++i) {
        for (int c = 0; c < 3; ++c) {
          image.pixels[3 * i + c] = composite_over_white(canvas[4 * i + c], canvas[4 * i + 3]);
        }
      }
      image = fit_to_request(std::move(image), request);
      const double time = double(start_ms_[size_t(index)]) / 1000.0;
      while (next < indices.size() && indices[next] == index) {
        const bool last_use = next + 1 == indices.size() || indices[next + 1] != index;
        VideoFrame out{last_use ? std::move(image) : image, index, time};
        ++next;
        sink(std::move(out));
      }
    }
  }

 private:
  std::string bytes_;
  VideoLimits limits_;
  std::shared_ptr<const DecodeDeadline> deadline_;
  VideoInfo info_;
  std::vector<int64_t> start_ms_;
};

}  // namespace

VideoDecoderPtr open_webp_animation(std::string bytes, const VideoLimits& limits,
                                    std::shared_ptr<const DecodeDeadline> deadline) {
  return std::make_unique<WebpAnimation>(std::move(bytes), limits, std::move(deadline));
}

}  // namespace qvl::media
