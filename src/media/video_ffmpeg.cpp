// Video through FFmpeg's libraries: MP4/MOV, Matroska/WebM and GIF with H.264, HEVC, VP8, VP9,
// AV1 (libdav1d), MPEG-4 Part 2 and GIF streams.
//
// open: probe and open the container (video_ffmpeg_io.cpp), check the header against the limits,
// then one pass over the video packets without decoding (cheap: the bytes are in memory) that
// builds the frame table, every frame's presentation timestamp in order. Index k is the k-th
// entry, so variable frame rates and truncated files need no guessing.
// decode: a fresh demuxer and decoder per call; for each wanted frame far enough ahead, seek to
// the keyframe before it (when the container's index says that skips anything), decode forward
// and convert only the wanted frames.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/display.h>
}

#include "base/error.h"
#include "media/video_ffmpeg_io.h"

namespace qvl::media {
namespace {

using namespace ffmpeg;

// Decode forward rather than seek when the next wanted frame is at most this many frames ahead.
constexpr int64_t kDecodeAheadFrames = 12;
// Seek this many frames before the wanted one: a keyframe's index timestamp may be its decode
// time, which B-frame reordering puts up to 16 frames before its presentation time in H.264.
constexpr int64_t kReorderFrames = 16;
// More consecutive packets the decoder rejects than this: the stream is damaged beyond use.
constexpr int kMaxPacketErrors = 64;

struct DecoderChoice {
  const char* decoder;  // FFmpeg's decoder name
  const char* codec;    // what VideoInfo reports
};

std::optional<DecoderChoice> decoder_for(AVCodecID id) {
  switch (id) {
    case AV_CODEC_ID_H264:
      return DecoderChoice{"h264", "h264"};
    case AV_CODEC_ID_HEVC:
      return DecoderChoice{"hevc", "hevc"};
    case AV_CODEC_ID_VP8:
      return DecoderChoice{"vp8", "vp8"};
    case AV_CODEC_ID_VP9:
      return DecoderChoice{"vp9", "vp9"};
    case AV_CODEC_ID_AV1:  // FFmpeg 5.1's own AV1 decoder needs hardware; dav1d is software
      return DecoderChoice{"libdav1d", "av1"};
    case AV_CODEC_ID_MPEG4:
      return DecoderChoice{"mpeg4", "mpeg4"};
    case AV_CODEC_ID_GIF:
      return DecoderChoice{"gif", "gif"};
    default:
      return std::nullopt;
  }
}

const AVCodec* find_decoder(const AVCodecParameters& par) {
  const auto choice = decoder_for(par.codec_id);
  const char* name = avcodec_get_name(par.codec_id);
  if (!choice) {
    fail(ErrorCode::kUnsupported,
         std::string("the video codec ") + name +
             " is not supported (H.264, HEVC, VP8, VP9, AV1, MPEG-4 Part 2 and GIF are)");
  }
  const AVCodec* codec = avcodec_find_decoder_by_name(choice->decoder);
  if (!codec) {
    fail(ErrorCode::kUnsupported,
         std::string("this qvl's FFmpeg has no decoder for the video codec ") + name);
  }
  return codec;
}

// The video stream to decode: the first one that is not a cover picture.
int pick_stream(AVFormatContext* format) {
  bool other_media = false;
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    const AVStream* st = format->streams[i];
    const AVMediaType type = st->codecpar->codec_type;
    if (type == AVMEDIA_TYPE_VIDEO && !(st->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
      return static_cast<int>(i);
    }
    if (type == AVMEDIA_TYPE_AUDIO || type == AVMEDIA_TYPE_SUBTITLE) other_media = true;
  }
  // Audio but no picture is a user's mistake; no recognisable stream at all is damage.
  if (other_media) fail(ErrorCode::kInvalidArgument, "the file has no video stream");
  fail(ErrorCode::kCorrupt, "the video file is damaged or truncated (no readable video stream)");
}

// Clockwise degrees a player turns the frames by, from the display matrix, to a multiple of 90.
int display_rotation(const AVStream* st) {
  const uint8_t* matrix = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, nullptr);
  if (!matrix) return 0;
  // av_display_rotation_get is counter-clockwise; NaN for a degenerate matrix.
  const double degrees = -av_display_rotation_get(reinterpret_cast<const int32_t*>(matrix));
  if (!std::isfinite(degrees)) return 0;
  const long quarter = std::lround(degrees / 90.0);
  return static_cast<int>(((quarter % 4) + 4) % 4) * 90;
}

double seconds_of(int64_t ticks, AVRational time_base) {
  return double(ticks) * av_q2d(time_base);
}

// Discard every stream but the video one, so the demuxer skips their packets.
void keep_only(AVFormatContext* format, int stream_index) {
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    format->streams[i]->discard = int(i) == stream_index ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
  }
}

class FfmpegVideo final : public VideoSource::Decoder {
 public:
  FfmpegVideo(std::string bytes, const VideoLimits& limits,
              std::shared_ptr<const DecodeDeadline> deadline)
      : bytes_(std::move(bytes)), limits_(limits), deadline_(std::move(deadline)) {
    Container container(bytes_, *deadline_);
    AVFormatContext* format = container.format();
    stream_index_ = pick_stream(format);
    const AVStream* st = format->streams[stream_index_];
    const AVCodecParameters& par = *st->codecpar;
    codec_ = find_decoder(par);
    time_base_ = st->time_base;
    if (time_base_.num <= 0 || time_base_.den <= 0) {
      fail(ErrorCode::kCorrupt, "the video stream has no valid time base");
    }
    info_.codec = decoder_for(par.codec_id)->codec;
    stored_width_ = par.width;
    stored_height_ = par.height;
    if (stored_width_ <= 0 || stored_height_ <= 0) {
      // Some muxers leave the size to the bitstream (MPEG-4 Part 2 in MOV): the first frame
      // tells it, and the decoder's max_pixels bounds that frame.
      first_frame_size();
    }
    check_frame_size(stored_width_, stored_height_, limits_);
    // What the container declares, checked before the packet pass reads anything.
    if (st->duration > 0) check_duration(seconds_of(st->duration, time_base_), limits_);
    if (format->duration > 0) check_duration(double(format->duration) / AV_TIME_BASE, limits_);
    if (st->nb_frames > kMaxStreamFrames) check_stream_frames(st->nb_frames);

    info_.container = container.name();
    info_.rotation_degrees = display_rotation(st);
    const bool sideways = info_.rotation_degrees % 180 != 0;
    info_.width = sideways ? stored_height_ : stored_width_;
    info_.height = sideways ? stored_width_ : stored_height_;
    seekable_ = container.seekable();
    scan_packets(container, st->nb_frames, st->avg_frame_rate);
  }

  const VideoInfo& info() const override { return info_; }

  void decode(const FrameRequest& request, const std::function<void(VideoFrame&&)>& sink) override;

 private:
  void scan_packets(Container& container, int64_t declared_frames, AVRational average_rate);
  void first_frame_size();
  CodecPtr open_codec(const AVStream* st) const;
  int64_t index_of(int64_t pts, int64_t decoded_index) const;

  std::string bytes_;
  VideoLimits limits_;
  std::shared_ptr<const DecodeDeadline> deadline_;
  VideoInfo info_;
  const AVCodec* codec_ = nullptr;
  int stream_index_ = 0;
  AVRational time_base_{0, 1};
  int stored_width_ = 0;  // before rotation
  int stored_height_ = 0;
  bool seekable_ = false;
  std::vector<int64_t> frame_pts_;  // presentation timestamps, ascending: the frame table
};

void FfmpegVideo::scan_packets(Container& container, int64_t declared_frames,
                               AVRational average_rate) {
  AVFormatContext* format = container.format();
  keep_only(format, stream_index_);
  PacketPtr packet = make_packet();
  int64_t last_end = AV_NOPTS_VALUE;  // presentation end of the latest frame, for the duration
  int read_error = 0;
  uint64_t packets = 0;
  for (;;) {
    const int got = av_read_frame(format, packet.get());
    if (got < 0) {
      deadline_->check();
      if (got != AVERROR_EOF) read_error = got;
      break;
    }
    // The read callback stops at the deadline, but packets already buffered need no reads.
    if ((++packets & 255) == 0) deadline_->check();
    const bool wanted = packet->stream_index == stream_index_ &&
                        !(packet->flags & (AV_PKT_FLAG_DISCARD | AV_PKT_FLAG_CORRUPT));
    if (wanted) {
      int64_t pts = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
      if (pts == AV_NOPTS_VALUE) pts = frame_pts_.empty() ? 0 : frame_pts_.back() + 1;
      frame_pts_.push_back(pts);
      const int64_t end = pts + std::max<int64_t>(packet->duration, 0);
      if (last_end == AV_NOPTS_VALUE || end > last_end) last_end = end;
      if (static_cast<int64_t>(frame_pts_.size()) > kMaxStreamFrames)
        check_stream_frames(kMaxStreamFrames + 1);
    }
    av_packet_unref(packet.get());
  }
  if (frame_pts_.empty()) {
    fail(ErrorCode::kCorrupt,
         read_error ? "the video stream has no readable frames (" + error_text(read_error) + ")"
                    : std::string("the video stream has no frames"));
  }
  std::stable_sort(frame_pts_.begin(), frame_pts_.end());
  const auto count = static_cast<int64_t>(frame_pts_.size());
  info_.frame_count = count;
  info_.frame_count_source = count == declared_frames ? "header" : "counted";

  // Duration: first frame's start to the last frame's end. When packets carry no durations
  // (some Matroska and GIF files), the last frame lasts as long as the average one before it.
  int64_t span = last_end - frame_pts_.front();
  if (span <= frame_pts_.back() - frame_pts_.front() && count > 1) {
    span = (frame_pts_.back() - frame_pts_.front()) * count / (count - 1);
  }
  double duration = seconds_of(span, time_base_);
  const double rate = av_q2d(average_rate);
  if (!(duration > 0)) {
    if (!(rate > 0)) fail(ErrorCode::kCorrupt, "the video stream has no frame timing");
    duration = double(count) / rate;
  }
  check_duration(duration, limits_);
  info_.duration_s = duration;
  // The container's average rate (what PyAV reports as average_rate) when it agrees with the
  // frames found; otherwise frames over duration.
  const double measured = double(count) / duration;
  info_.fps = rate > 0 && std::fabs(rate - measured) <= 0.01 * measured ? rate : measured;
}

void FfmpegVideo::first_frame_size() {
  Container container(bytes_, *deadline_);
  AVFormatContext* format = container.format();
  keep_only(format, stream_index_);
  CodecPtr codec = open_codec(format->streams[stream_index_]);
  PacketPtr packet = make_packet();
  FramePtr frame = make_frame();
  for (int packets = 0; packets < kMaxPacketErrors; ++packets) {
    deadline_->check();
    const int got = av_read_frame(format, packet.get());
    if (got < 0) {
      deadline_->check();
      avcodec_send_packet(codec.get(), nullptr);
    } else if (packet->stream_index == stream_index_) {
      avcodec_send_packet(codec.get(), packet.get());
    }
    av_packet_unref(packet.get());
    if (avcodec_receive_frame(codec.get(), frame.get()) == 0) {
      stored_width_ = frame->width;
      stored_height_ = frame->height;
      return;
    }
    if (got < 0) break;
  }
  fail(ErrorCode::kCorrupt,
       "the video stream declares no frame size and its first frame cannot be decoded");
}

CodecPtr FfmpegVideo::open_codec(const AVStream* st) const {
  CodecPtr codec(avcodec_alloc_context3(codec_));
  if (!codec) fail(ErrorCode::kResourceExhausted, "out of memory for the video decoder");
  if (avcodec_parameters_to_context(codec.get(), st->codecpar) < 0) {
    fail(ErrorCode::kCorrupt, "the video stream's codec parameters are invalid");
  }
  codec->pkt_timebase = st->time_base;
  codec->thread_count = limits_.decoder_threads;
  // The decoder refuses frames above the limit before allocating them (a stream header inside
  // the bitstream may claim another size than the container did).
  codec->max_pixels = static_cast<int64_t>(limits_.max_frame_pixels);
  const int opened = avcodec_open2(codec.get(), codec_, nullptr);
  if (opened < 0) {
    fail(ErrorCode::kCorrupt,
         "the " + info_.codec + " decoder refused the video stream (" + error_text(opened) + ")");
  }
  return codec;
}

int64_t FfmpegVideo::index_of(int64_t pts, int64_t decoded_index) const {
  // The frame shown at pts: the last table entry at or before it. Several frames may share a
  // timestamp (muxers that round): they come out in order, so the first one not yet used.
  const auto after = std::upper_bound(frame_pts_.begin(), frame_pts_.end(), pts);
  if (after == frame_pts_.begin()) return 0;
  const int64_t last = (after - frame_pts_.begin()) - 1;
  const int64_t first =
      std::lower_bound(frame_pts_.begin(), frame_pts_.end(), frame_pts_[size_t(last)]) -
      frame_pts_.begin();
  if (first <= decoded_index && decoded_index < last) return decoded_index + 1;
  return first;
}

void FfmpegVideo::decode(const FrameRequest& request,
                         const std::function<void(VideoFrame&&)>& sink) {
  const std::vector<int64_t>& indices = request.indices;
  deadline_->check();
  Container container(bytes_, *deadline_);
  AVFormatContext* format = container.format();
  keep_only(format, stream_index_);
  AVStream* st = format->streams[stream_index_];
  CodecPtr codec = open_codec(st);
  PacketPtr packet = make_packet();
  FramePtr frame = make_frame();
  FramePtr last_frame = make_frame();  // the latest decoded frame, for indices past the end
  bool have_last = false;
  // sws_getCachedContext frees and replaces the context itself; this frees the final one.
  struct ScaleContext {
    SwsContext* context = nullptr;
    ~ScaleContext() { sws_freeContext(context); }
  } scale;

  std::vector<int64_t> wanted_pts;  // presentation times of the wanted frames, ascending
  for (const int64_t index : indices) wanted_pts.push_back(frame_pts_[size_t(index)]);
  size_t next = 0;             // the first index in `indices` not yet handed out
  int64_t decoded_index = -1;  // table index of the latest decoded frame
  int64_t sought_for = -1;     // the wanted index the latest seek was for
  bool seek_back_to_start = false;
  bool draining = false;  // the demuxer is at its end: the decoder gives out what it holds
  int seeks = 0;          // seeks so far: a packet read before a seek is stale after it
  int packet_errors = 0;
  int last_error = 0;

  auto seek_to = [&](int64_t frame_index) {
    if (av_seek_frame(format, stream_index_, frame_pts_[size_t(frame_index)],
                      AVSEEK_FLAG_BACKWARD) < 0) {
      deadline_->check();
      return false;
    }
    avcodec_flush_buffers(codec.get());
    ++seeks;
    return true;
  };
  auto maybe_seek = [&]() {
    const int64_t target = indices[next];
    if (!seekable_ || draining || target - decoded_index <= kDecodeAheadFrames) return;
    const int64_t from = std::max<int64_t>(0, target - kReorderFrames);
    const int entry = av_index_search_timestamp(st, frame_pts_[size_t(from)], AVSEEK_FLAG_BACKWARD);
    if (entry >= 0 && decoded_index >= 0) {
      const AVIndexEntry* keyframe = avformat_index_get_entry(st, entry);
      if (keyframe && keyframe->timestamp <= frame_pts_[size_t(decoded_index)]) return;
    }
    if (seek_to(from)) sought_for = target;
  };
  // Hands out `decoded` (table index frame_index) for every wanted index up to cover_through.
  auto emit = [&](const AVFrame& decoded, int64_t frame_index, int64_t cover_through) {
    if (decoded.width * int64_t(decoded.height) > int64_t(limits_.max_frame_pixels)) {
      check_frame_size(decoded.width, decoded.height, limits_);
    }
    RgbImage image = frame_to_rgb(decoded, stored_width_, stored_height_, scale.context);
    image = fit_to_request(rotate_clockwise(std::move(image), info_.rotation_degrees), request);
    const double time =
        seconds_of(frame_pts_[size_t(frame_index)] - frame_pts_.front(), time_base_);
    while (next < indices.size() && indices[next] <= cover_through) {
      const bool last_use = next + 1 == indices.size() || indices[next + 1] > cover_through;
      VideoFrame out{last_use ? std::move(image) : image, indices[next], time};
      ++next;
      sink(std::move(out));
    }
  };
  auto take_frames = [&]() {
    for (;;) {
      const int got = avcodec_receive_frame(codec.get(), frame.get());
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return;
      if (got < 0) {
        last_error = got;
        ++packet_errors;
        return;
      }
      deadline_->check();
      // The frame's own timestamp, not best_effort_timestamp: its heuristic switches to decode
      // times when presentation times repeat, and the table holds presentation times.
      int64_t pts = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->best_effort_timestamp;
      if (pts == AV_NOPTS_VALUE) {
        pts = decoded_index + 1 < int64_t(frame_pts_.size()) ? frame_pts_[size_t(decoded_index + 1)]
                                                             : frame_pts_.back();
      }
      if (pts < frame_pts_.front()) {
        // Before the first frame of the table (a frame an edit list cuts away): not a frame.
        av_frame_unref(frame.get());
        continue;
      }
      const int64_t index = index_of(pts, decoded_index);
      if (sought_for >= 0 && index > sought_for && !seek_back_to_start && !draining) {
        // The seek landed after the wanted frame (an index entry far off its picture): decode
        // from the start instead, once.
        seek_back_to_start = true;
        sought_for = -1;
        seek_to(0);
        av_frame_unref(frame.get());
        return;
      }
      sought_for = -1;
      decoded_index = index;
      av_frame_unref(last_frame.get());
      av_frame_move_ref(last_frame.get(), frame.get());
      have_last = true;
      if (next < indices.size() && index >= indices[next]) {
        emit(*last_frame, index, index);
        if (next < indices.size()) maybe_seek();
      }
      if (next == indices.size()) return;
    }
  };

  maybe_seek();
  while (next < indices.size() && !draining) {
    deadline_->check();
    const int got = av_read_frame(format, packet.get());
    if (got < 0) {
      deadline_->check();
      draining = true;
      avcodec_send_packet(codec.get(), nullptr);
    } else {
      if (packet->stream_index == stream_index_) {
        // A frame no other frame refers to (most B-frames) need not be decoded unless it is
        // wanted: the decoders read skip_frame per frame.
        codec->skip_frame =
            packet->pts != AV_NOPTS_VALUE &&
                    !std::binary_search(wanted_pts.begin(), wanted_pts.end(), packet->pts)
                ? AVDISCARD_NONREF
                : AVDISCARD_DEFAULT;
        int sent = avcodec_send_packet(codec.get(), packet.get());
        if (sent == AVERROR(EAGAIN)) {
          // The decoder is full: take its frames, then give it the packet again, unless taking
          // them sought elsewhere (the packet is then stale).
          const int seeks_before = seeks;
          take_frames();
          sent = next < indices.size() && seeks == seeks_before
                     ? avcodec_send_packet(codec.get(), packet.get())
                     : 0;
        }
        if (sent < 0 && sent != AVERROR(EAGAIN)) {
          if (sent == AVERROR(ENOMEM)) {
            fail(ErrorCode::kResourceExhausted, "out of memory decoding the video");
          }
          last_error = sent;
          if (++packet_errors > kMaxPacketErrors) break;
        } else {
          packet_errors = 0;
        }
      }
      av_packet_unref(packet.get());
    }
    take_frames();
  }
  if (next < indices.size() && !have_last) {
    fail(ErrorCode::kCorrupt,
         "no frame of the video could be decoded" +
             (last_error ? " (" + error_text(last_error) + ")" : std::string()));
  }
  if (next < indices.size()) {
    if (packet_errors > kMaxPacketErrors) {
      fail(ErrorCode::kCorrupt, "the video stream is damaged (" + error_text(last_error) + ")");
    }
    // Frames the stream promised but did not deliver: the last decoded one stands in for them.
    emit(*last_frame, decoded_index, indices.back());
  }
}

}  // namespace

VideoDecoderPtr open_ffmpeg_video(std::string bytes, const VideoLimits& limits,
                                  std::shared_ptr<const DecodeDeadline> deadline) {
  return std::make_unique<FfmpegVideo>(std::move(bytes), limits, std::move(deadline));
}

}  // namespace qvl::media
