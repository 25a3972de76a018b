#include "cli/bench_video.h"

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "base/timer.h"
#include "cli/synthetic_image.h"
#include "image/video_preprocess.h"
#include "media/video_encode.h"
#include "media/video_source.h"

namespace qvl::cli {
namespace {

constexpr int kWidth = 640, kHeight = 360, kFps = 30, kSeconds = 10;
constexpr int kPan = kFps * kSeconds;  // the scene is this much wider than a frame

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A camera panning over a drawn scene, one pixel a frame: consecutive frames share most of their
// content, as in real footage, so the encoder's motion search has something to find.
class PanningScene {
 public:
  PanningScene() : scene_(synthetic_scene(kWidth + kPan, kHeight, 7)) {}
  RgbImage frame(int k) const {
    RgbImage out{kWidth, kHeight, std::vector<uint8_t>(size_t{kWidth} * kHeight * 3)};
    for (int y = 0; y < kHeight; ++y) {
      const uint8_t* from = &scene_.pixels[(size_t(y) * scene_.width + size_t(k % kPan)) * 3];
      std::copy(from, from + size_t{kWidth} * 3, &out.pixels[size_t(y) * kWidth * 3]);
    }
    return out;
  }

 private:
  RgbImage scene_;
};

GenerationRequest first_token_request(std::vector<ContentPart> parts) {
  GenerationRequest r;
  parts.push_back({ContentPart::Kind::kText, "Describe what happens.", -1});
  r.messages.push_back({"user", false, std::move(parts)});
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 1;
  return r;
}

}  // namespace

std::optional<VideoFigures> measure_video(Engine& engine, int repeats) {
  if (!media::video_supported() || engine.info().video_max_frames <= 0) {
    QVL_LOG(kWarn) << "bench: no video support in this qvl or model; video figures skipped";
    return std::nullopt;
  }
  const PanningScene scene;
  VideoFigures f;
  media::ClipEncoding encoding;
  encoding.width = kWidth;
  encoding.height = kHeight;
  encoding.fps = kFps;
  encoding.frames = kFps * kSeconds;
  const std::string clip = media::encode_mp4_clip(
      encoding, [&](int k) { return scene.frame(k); }, &f.codec);
  VideoInput video;
  video.bytes.assign(clip.begin(), clip.end());

  std::vector<double> decode, vision, ttft, image_vision, image_ttft;
  for (int rep = 0; rep < repeats; ++rep) {
    const Timer decode_timer;
    const PreprocessedVideo prepared = engine.sample_video(video);
    decode.push_back(decode_timer.millis());
    f.frames = static_cast<int64_t>(prepared.frame_indices.size());

    GenerationRequest as_video = first_token_request({{ContentPart::Kind::kVideo, "", -1, 0}});
    as_video.videos.push_back(video);
    const GenerationResult v = engine.generate(as_video);
    f.tokens = v.stats.video_tokens;
    ttft.push_back(v.stats.ttft_ms);

    // The tower alone: the sampled frames handed over decoded and resized, as a frame list.
    GenerationRequest as_frames = first_token_request({{ContentPart::Kind::kVideo, "", -1, 0}});
    as_frames.videos.emplace_back();
    for (const RgbImage& frame : prepared.resized) {
      as_frames.videos[0].frames.push_back(encode_bmp(frame));
    }
    vision.push_back(engine.generate(as_frames).stats.image_ms);

    // The same frames, each its own picture.
    GenerationRequest as_images = first_token_request({});
    for (const int64_t index : prepared.frame_indices) {
      as_images.messages[0].parts.insert(
          as_images.messages[0].parts.end() - 1,
          {ContentPart::Kind::kImage, "", static_cast<int>(as_images.images.size())});
      as_images.images.push_back({encode_bmp(scene.frame(static_cast<int>(index))), 0, 0});
    }
    const GenerationResult i = engine.generate(as_images);
    f.image_tokens = i.stats.image_tokens;
    image_vision.push_back(i.stats.image_ms);
    image_ttft.push_back(i.stats.ttft_ms);
  }
  f.decode_ms = median(decode);
  f.vision_ms = median(vision);
  f.ttft_ms = median(ttft);
  f.image_vision_ms = median(image_vision);
  f.image_ttft_ms = median(image_ttft);
  return f;
}

void add_video_json(const VideoFigures& f, nlohmann::json& report) {
  report["video_clip_codec"] = f.codec;
  report["video_10s_640x360_frames"] = f.frames;
  report["video_10s_640x360_tokens"] = f.tokens;
  report["video_decode_ms"] = f.decode_ms;
  report["video_vision_ms"] = f.vision_ms;
  report["ttft_video_10s_ms"] = f.ttft_ms;
  report["video_as_images_tokens"] = f.image_tokens;
  report["video_as_images_vision_ms"] = f.image_vision_ms;
  report["ttft_video_as_images_ms"] = f.image_ttft_ms;
}

}  // namespace qvl::cli
