// Decoded video frames to 8-bit RGB through swscale.
//
// Colour: the frame's own matrix (BT.601/709/2020, SMPTE 240M, FCC) and range (limited or full)
// as the stream tags them; untagged streams get BT.601 below 720 lines and BT.709 from 720 up,
// the convention players and browsers follow, so the model sees the colours a viewer sees.
// (PyAV's to_ndarray("rgb24") and torchvision's PyAV path pass no colour details to swscale and
// so always use BT.601 limited range: on BT.709 HD material their colours differ by a few levels.)
// Chroma is interpolated at full resolution with accurate rounding; no resizing happens here
// unless a stream changes its frame size mid-way.
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include "base/error.h"
#include "image/decode.h"
#include "media/video_ffmpeg_io.h"

namespace qvl::media::ffmpeg {
namespace {

// A decoder copies colour tags from the bitstream unchecked, so an AVColorSpace or AVColorRange
// field may hold a value outside its enum (loading that as the enum is undefined behaviour):
// read the raw integer.
template <typename Enum>
int raw_tag(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int));
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

int colour_matrix(const AVFrame& frame) {
  switch (raw_tag(frame.colorspace)) {
    case AVCOL_SPC_BT709:
      return SWS_CS_ITU709;
    case AVCOL_SPC_BT470BG:
    case AVCOL_SPC_SMPTE170M:
      return SWS_CS_ITU601;
    case AVCOL_SPC_SMPTE240M:
      return SWS_CS_SMPTE240M;
    case AVCOL_SPC_FCC:
      return SWS_CS_FCC;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL:
      return SWS_CS_BT2020;
    default:
      return frame.height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601;
  }
}

bool full_range(const AVFrame& frame) {
  switch (frame.format) {
    case AV_PIX_FMT_YUVJ420P:
    case AV_PIX_FMT_YUVJ422P:
    case AV_PIX_FMT_YUVJ444P:
    case AV_PIX_FMT_YUVJ440P:
    case AV_PIX_FMT_YUVJ411P:
      return true;
    default:
      return raw_tag(frame.color_range) == AVCOL_RANGE_JPEG;
  }
}

}  // namespace

RgbImage frame_to_rgb(const AVFrame& frame, int out_width, int out_height, SwsContext*& scale) {
  const auto source = static_cast<AVPixelFormat>(frame.format);
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(source);
  if (!desc || frame.width <= 0 || frame.height <= 0) {
    fail(ErrorCode::kCorrupt, "the video decoder returned a frame without a pixel format or size");
  }
  const bool alpha = (desc->flags & (AV_PIX_FMT_FLAG_ALPHA | AV_PIX_FMT_FLAG_PAL)) != 0;
  const AVPixelFormat target = alpha ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24;
  scale = sws_getCachedContext(scale, frame.width, frame.height, source, out_width, out_height,
                               target, SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr,
                               nullptr, nullptr);
  if (!scale) {
    fail(ErrorCode::kUnsupported,
         std::string("video frames in pixel format ") + desc->name + " cannot be converted to RGB");
  }
  const bool yuv =
      !(desc->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL)) && desc->nb_components >= 3;
  if (yuv) {
    // Output is full-range RGB; brightness, contrast and saturation stay neutral (1.0 in 16.16).
    sws_setColorspaceDetails(scale, sws_getCoefficients(colour_matrix(frame)),
                             full_range(frame) ? 1 : 0, sws_getCoefficients(SWS_CS_DEFAULT), 1, 0,
                             1 << 16, 1 << 16);
  }
  const int channels = alpha ? 4 : 3;
  const size_t pixels = size_t(out_width) * size_t(out_height);
  RgbImage out;
  out.width = out_width;
  out.height = out_height;
  out.pixels.resize(pixels * 3);
  std::vector<uint8_t> rgba;
  uint8_t* destination = out.pixels.data();
  if (alpha) {
    rgba.resize(pixels * 4);
    destination = rgba.data();
  }
  uint8_t* planes[4] = {destination, nullptr, nullptr, nullptr};
  int strides[4] = {out_width * channels, 0, 0, 0};
  const int rows = sws_scale(scale, frame.data, frame.linesize, 0, frame.height, planes, strides);
  if (rows != out_height) {
    fail(ErrorCode::kCorrupt, "a video frame could not be converted to RGB");
  }
  if (alpha) {
    for (size_t i = 0; i < pixels; ++i) {
      const uint8_t a = rgba[4 * i + 3];
      for (int c = 0; c < 3; ++c) out.pixels[3 * i + c] = composite_over_white(rgba[4 * i + c], a);
    }
  }
  return out;
}

}  // namespace qvl::media::ffmpeg
