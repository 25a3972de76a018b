// Internal: FFmpeg plumbing for the video decoder (video_ffmpeg.cpp). A container opened over
// bytes in memory, restricted to the demuxers qvl supports and unable to open anything else
// (no files, no network, no external references), and the conversion of decoded frames to RGB.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}

#include <memory>
#include <string>

#include "image/rgb_image.h"
#include "media/video_decoder.h"

namespace qvl::media::ffmpeg {

// FFmpeg's own log lines go to qvl's debug log from the first call on (once per process).
void route_logs();

// FFmpeg's message for an AVERROR code.
std::string error_text(int code);

struct FrameFree {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
struct PacketFree {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
struct CodecFree {
  void operator()(AVCodecContext* codec) const { avcodec_free_context(&codec); }
};
using FramePtr = std::unique_ptr<AVFrame, FrameFree>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFree>;
using CodecPtr = std::unique_ptr<AVCodecContext, CodecFree>;

FramePtr make_frame();
PacketPtr make_packet();

// An open demuxer over `bytes` (which must outlive it). Throws qvl::Error with a clear message:
// kInvalidArgument for a still image or a format that is not a video container, kUnsupported for
// a container qvl does not accept, kCorrupt when the demuxer cannot read the header, and
// kResourceExhausted when the deadline passes.
class Container {
 public:
  Container(const std::string& bytes, const DecodeDeadline& deadline);
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  AVFormatContext* format() const { return format_; }
  // "mp4", "mov", "webm", "matroska" or "gif".
  const std::string& name() const { return name_; }
  // Whether av_seek_frame can be used (MP4/MOV and Matroska; GIF decodes from the start).
  bool seekable() const { return seekable_; }

  // Reader state for the AVIO callbacks.
  struct Reader {
    const std::string* bytes = nullptr;
    int64_t position = 0;
    const DecodeDeadline* deadline = nullptr;
  };

 private:
  void release();

  Reader reader_;
  AVIOContext* io_ = nullptr;
  AVFormatContext* format_ = nullptr;
  std::string name_;
  bool seekable_ = false;
};

// Converts a decoded frame to RGB of out_width x out_height (the frame's own size unless the
// stream changed size mid-way): the frame's colour matrix and range (BT.601 for untagged SD,
// BT.709 for untagged HD), alpha composited over white. `scale` caches the swscale context.
RgbImage frame_to_rgb(const AVFrame& frame, int out_width, int out_height, SwsContext*& scale);

}  // namespace qvl::media::ffmpeg
