// encode_mp4_clip (video_encode.h): libavcodec's encoder and the MP4 muxer writing to memory.
#include "media/video_encode.h"

#include "base/error.h"

#if QVL_HAS_VIDEO
extern "C" {
#include <libavutil/opt.h>
}

#include <cstring>

#include "media/video_ffmpeg_io.h"
#endif

namespace qvl::media {

#if QVL_HAS_VIDEO
namespace {

using ffmpeg::error_text;

void check(int result, const char* what) {
  if (result < 0) fail(ErrorCode::kInternal, std::string(what) + ": " + error_text(result));
}

// The MP4 muxer writes the file front to back, then seeks back to patch box sizes.
struct MemoryFile {
  std::string bytes;
  int64_t position = 0;
};

int write_bytes(void* opaque, uint8_t* data, int size) {
  auto* file = static_cast<MemoryFile*>(opaque);
  const auto end = static_cast<size_t>(file->position) + static_cast<size_t>(size);
  if (end > file->bytes.size()) file->bytes.resize(end);
  std::memcpy(file->bytes.data() + file->position, data, static_cast<size_t>(size));
  file->position = static_cast<int64_t>(end);
  return size;
}

int64_t seek_bytes(void* opaque, int64_t offset, int whence) {
  auto* file = static_cast<MemoryFile*>(opaque);
  const auto size = static_cast<int64_t>(file->bytes.size());
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE:
      return size;
    case SEEK_SET:
      break;
    case SEEK_CUR:
      offset += file->position;
      break;
    case SEEK_END:
      offset += size;
      break;
    default:
      return AVERROR(EINVAL);
  }
  if (offset < 0) return AVERROR(EINVAL);
  file->position = offset;
  return offset;
}

struct Muxer {
  MemoryFile file;
  AVFormatContext* format = nullptr;
  AVIOContext* io = nullptr;
  ~Muxer() {
    if (io) {
      av_freep(&io->buffer);
      avio_context_free(&io);
    }
    avformat_free_context(format);
  }
};

struct ScaleFree {
  void operator()(SwsContext* scale) const { sws_freeContext(scale); }
};

const AVCodec* find_encoder(std::string* codec) {
  if (const AVCodec* x264 = avcodec_find_encoder_by_name("libx264")) {
    if (codec) *codec = "h264";
    return x264;
  }
  if (const AVCodec* mpeg4 = avcodec_find_encoder(AV_CODEC_ID_MPEG4)) {
    if (codec) *codec = "mpeg4";
    return mpeg4;
  }
  fail(ErrorCode::kUnsupported, "this FFmpeg has neither libx264 nor its MPEG-4 encoder");
}

// Sends `frame` (nullptr: the end) and writes every packet the encoder has ready.
void encode(AVCodecContext* codec, AVFrame* frame, AVFormatContext* format, AVStream* stream) {
  check(avcodec_send_frame(codec, frame), "encoding a frame");
  const ffmpeg::PacketPtr packet = ffmpeg::make_packet();
  for (;;) {
    const int received = avcodec_receive_packet(codec, packet.get());
    if (received == AVERROR(EAGAIN) || received == AVERROR_EOF) return;
    check(received, "encoding a frame");
    // Every frame lasts one tick: without it the muxer gives the last frame no duration and
    // the file's rate comes out as 300 frames in 9.967 s.
    packet->duration = 1;
    av_packet_rescale_ts(packet.get(), codec->time_base, stream->time_base);
    packet->stream_index = stream->index;
    check(av_interleaved_write_frame(format, packet.get()), "writing the MP4 file");
  }
}

}  // namespace

std::string encode_mp4_clip(const ClipEncoding& e, const std::function<RgbImage(int)>& draw,
                            std::string* codec_name) {
  if (e.width < 16 || e.height < 16 || e.width % 2 || e.height % 2 || e.fps < 1 || e.frames < 1 ||
      e.keyframe_interval < 1) {
    fail(ErrorCode::kInvalidArgument, "a clip needs even sides of 16 or more and frames");
  }
  ffmpeg::route_logs();  // libx264's banner and statistics are not the command's output
  Muxer mux;
  check(avformat_alloc_output_context2(&mux.format, nullptr, "mp4", nullptr), "the MP4 muxer");
  const AVCodec* encoder = find_encoder(codec_name);
  const ffmpeg::CodecPtr codec(avcodec_alloc_context3(encoder));
  if (!codec) fail(ErrorCode::kResourceExhausted, "out of memory for the video encoder");
  codec->width = e.width;
  codec->height = e.height;
  codec->time_base = {1, e.fps};
  codec->framerate = {e.fps, 1};
  codec->pix_fmt = AV_PIX_FMT_YUV420P;
  codec->gop_size = e.keyframe_interval;
  codec->max_b_frames = 2;
  codec->thread_count = 1;
  if (mux.format->oformat->flags & AVFMT_GLOBALHEADER) {
    codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  }
  if (std::strcmp(encoder->name, "libx264") == 0) {
    av_opt_set(codec->priv_data, "preset", "veryfast", 0);
    av_opt_set(codec->priv_data, "crf", "23", 0);
  } else {
    codec->bit_rate = int64_t{2} << 20;
  }
  check(avcodec_open2(codec.get(), encoder, nullptr), "opening the video encoder");
  AVStream* stream = avformat_new_stream(mux.format, nullptr);
  if (!stream) fail(ErrorCode::kResourceExhausted, "out of memory for the video stream");
  check(avcodec_parameters_from_context(stream->codecpar, codec.get()), "the stream parameters");
  stream->time_base = codec->time_base;
  stream->avg_frame_rate = codec->framerate;

  constexpr int kBufferSize = 1 << 16;
  auto* buffer = static_cast<uint8_t*>(av_malloc(kBufferSize));
  if (buffer) {
    mux.io =
        avio_alloc_context(buffer, kBufferSize, 1, &mux.file, nullptr, write_bytes, seek_bytes);
  }
  if (!mux.io) {
    av_free(buffer);
    fail(ErrorCode::kResourceExhausted, "out of memory for the MP4 file");
  }
  mux.format->pb = mux.io;
  mux.format->flags |= AVFMT_FLAG_CUSTOM_IO;
  check(avformat_write_header(mux.format, nullptr), "writing the MP4 header");

  const std::unique_ptr<SwsContext, ScaleFree> scale(
      sws_getContext(e.width, e.height, AV_PIX_FMT_RGB24, e.width, e.height, AV_PIX_FMT_YUV420P,
                     SWS_BICUBIC, nullptr, nullptr, nullptr));
  const ffmpeg::FramePtr frame = ffmpeg::make_frame();
  if (!scale) fail(ErrorCode::kResourceExhausted, "out of memory for the colour conversion");
  frame->format = AV_PIX_FMT_YUV420P;
  frame->width = e.width;
  frame->height = e.height;
  check(av_frame_get_buffer(frame.get(), 0), "a video frame");
  for (int k = 0; k < e.frames; ++k) {
    const RgbImage rgb = draw(k);
    if (rgb.width != e.width || rgb.height != e.height) {
      fail(ErrorCode::kInvalidArgument, "a drawn frame has the wrong size");
    }
    check(av_frame_make_writable(frame.get()), "a video frame");
    const uint8_t* planes[1] = {rgb.pixels.data()};
    const int strides[1] = {3 * e.width};
    sws_scale(scale.get(), planes, strides, 0, e.height, frame->data, frame->linesize);
    frame->pts = k;
    encode(codec.get(), frame.get(), mux.format, stream);
  }
  encode(codec.get(), nullptr, mux.format, stream);
  check(av_write_trailer(mux.format), "finishing the MP4 file");
  avio_flush(mux.io);
  return std::move(mux.file.bytes);
}

#else

std::string encode_mp4_clip(const ClipEncoding&, const std::function<RgbImage(int)>&,
                            std::string*) {
  fail(ErrorCode::kUnsupported, "this qvl was built without video support (QVL_VIDEO=OFF)");
}

#endif

}  // namespace qvl::media
