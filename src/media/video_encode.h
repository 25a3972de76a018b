// Encoding frames drawn in code into a video file in memory, for measurements that need a real
// clip without files or the ffmpeg program (`qvl bench`'s video figures): H.264 in MP4 through
// Debian's libavcodec (libx264), or FFmpeg's own MPEG-4 Part 2 encoder when libx264 is absent.
#pragma once

#include <functional>
#include <string>

#include "image/rgb_image.h"

namespace qvl::media {

struct ClipEncoding {
  int width = 640;
  int height = 360;
  int fps = 30;
  int frames = 300;
  int keyframe_interval = 30;  // a keyframe every second at 30 fps, as cameras and sites encode
};

// The MP4 file's bytes; `frame(k)` draws frame k (width x height). The codec is named in
// `codec` ("h264" or "mpeg4") when given. Throws qvl::Error (kUnsupported when built without
// video support or no encoder exists, kInvalidArgument for a bad size or count).
std::string encode_mp4_clip(const ClipEncoding& encoding, const std::function<RgbImage(int)>& frame,
                            std::string* codec = nullptr);

}  // namespace qvl::media
