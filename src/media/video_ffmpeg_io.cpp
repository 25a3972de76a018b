// The container half of the FFmpeg plumbing: bytes in memory behind an AVIOContext, probed and
// checked against the demuxers qvl accepts before FFmpeg parses anything.
#include "media/video_ffmpeg_io.h"

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/log.h"

namespace qvl::media::ffmpeg {
namespace {

constexpr int kIoBufferSize = 64 << 10;
// Bytes the prober looks at: enough for every supported container's signature.
constexpr size_t kProbeBytes = 1 << 20;
// The demuxers qvl opens (FFmpeg's names); everything else is refused before it parses a byte.
constexpr const char* kDemuxerWhitelist = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,gif";
constexpr const char* kSupported = "MP4/MOV, WebM/MKV, animated GIF or animated WebP";

int read_bytes(void* opaque, uint8_t* buffer, int size) {
  auto* reader = static_cast<Container::Reader*>(opaque);
  if (reader->deadline->passed()) return AVERROR_EXIT;
  const int64_t left = static_cast<int64_t>(reader->bytes->size()) - reader->position;
  if (left <= 0) return AVERROR_EOF;
  const int n = static_cast<int>(std::min<int64_t>(size, left));
  std::memcpy(buffer, reader->bytes->data() + reader->position, size_t(n));
  reader->position += n;
  return n;
}

int64_t seek_bytes(void* opaque, int64_t offset, int whence) {
  auto* reader = static_cast<Container::Reader*>(opaque);
  const auto size = static_cast<int64_t>(reader->bytes->size());
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return size;
  int64_t base = 0;
  if (whence == SEEK_CUR) {
    base = reader->position;
  } else if (whence == SEEK_END) {
    base = size;
  } else if (whence != SEEK_SET) {
    return AVERROR(EINVAL);
  }
  int64_t target = 0;
  if (__builtin_add_overflow(base, offset, &target) || target < 0 || target > size) {
    return AVERROR(EINVAL);
  }
  reader->position = target;
  return target;
}

int interrupted(void* opaque) {
  return static_cast<const DecodeDeadline*>(opaque)->passed() ? 1 : 0;
}

// Demuxers must never open a second resource (MOV data references, HLS playlists, concat).
int refuse_io_open(AVFormatContext*, AVIOContext**, const char* url, int, AVDictionary**) {
  (void)url;
  return AVERROR(EPERM);
}

bool is_still_image_demuxer(const std::string& name) {
  const std::string pipe = "_pipe";
  return name == "image2" || name == "apng" || name == "webp_pipe" ||
         (name.size() > pipe.size() &&
          name.compare(name.size() - pipe.size(), pipe.size(), pipe) == 0);
}

bool in_whitelist(const std::string& name) {
  return name == "mov,mp4,m4a,3gp,3g2,mj2" || name == "matroska,webm" || name == "gif";
}

const AVInputFormat* probe(const std::string& bytes) {
  const size_t n = std::min(bytes.size(), kProbeBytes);
  std::vector<uint8_t> buffer(n + AVPROBE_PADDING_SIZE, 0);
  std::memcpy(buffer.data(), bytes.data(), n);
  AVProbeData data{};
  data.filename = "";
  data.buf = buffer.data();
  data.buf_size = static_cast<int>(n);
  int score = 0;
  const AVInputFormat* format = av_probe_input_format2(&data, 1, &score);
  if (!format) {
    fail(ErrorCode::kInvalidArgument,
         std::string("the file is not a video qvl can read (expected ") + kSupported + ")");
  }
  const std::string name = format->name;
  if (name == "gif_pipe") return av_find_input_format("gif");
  if (is_still_image_demuxer(name)) {
    std::string kind = name.substr(0, name.find('_'));
    fail(ErrorCode::kInvalidArgument,
         "the file is a still image (" + kind + "), not a video: send it as an image");
  }
  if (!in_whitelist(name)) {
    fail(ErrorCode::kUnsupported, std::string("the ") + format->long_name +
                                      " format is not supported for video (expected " + kSupported +
                                      ")");
  }
  return format;
}

// The EBML header's DocType tells WebM from other Matroska files.
bool matroska_doctype_is_webm(const std::string& bytes) {
  const std::string head = bytes.substr(0, 64);
  const size_t at = head.find("\x42\x82");
  return at != std::string::npos && head.find("webm", at) != std::string::npos;
}

std::string mov_brand(AVFormatContext* format) {
  const AVDictionaryEntry* brand = av_dict_get(format->metadata, "major_brand", nullptr, 0);
  return brand && std::strncmp(brand->value, "qt", 2) == 0 ? "mov" : "mp4";
}

// FFmpeg's own messages on damaged input are noise at the server's level (the request gets its
// one-line error): they go to qvl's debug log, one line each.
void forward_log(void* object, int level, const char* format, va_list arguments) {
  if (level > AV_LOG_WARNING || log_level() > LogLevel::kDebug) return;
  char line[512];
  int prefix = 1;
  av_log_format_line2(object, level, format, arguments, line, sizeof line, &prefix);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!text.empty()) log_message(LogLevel::kDebug, "ffmpeg: " + text);
}

}  // namespace

void route_logs() {
  static std::once_flag log_once;
  std::call_once(log_once, [] { av_log_set_callback(forward_log); });
}

std::string error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

FramePtr make_frame() {
  FramePtr frame(av_frame_alloc());
  if (!frame) fail(ErrorCode::kResourceExhausted, "out of memory for a video frame");
  return frame;
}

PacketPtr make_packet() {
  PacketPtr packet(av_packet_alloc());
  if (!packet) fail(ErrorCode::kResourceExhausted, "out of memory for a video packet");
  return packet;
}

Container::Container(const std::string& bytes, const DecodeDeadline& deadline) {
  route_logs();
  const AVInputFormat* input_format = probe(bytes);
  reader_ = {&bytes, 0, &deadline};
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
  if (buffer)
    io_ = avio_alloc_context(buffer, kIoBufferSize, 0, &reader_, read_bytes, nullptr, seek_bytes);
  if (!io_) {
    av_free(buffer);
    fail(ErrorCode::kResourceExhausted, "out of memory opening the video");
  }
  format_ = avformat_alloc_context();
  if (!format_) {
    release();
    fail(ErrorCode::kResourceExhausted, "out of memory opening the video");
  }
  format_->pb = io_;
  format_->flags |= AVFMT_FLAG_CUSTOM_IO;
  format_->interrupt_callback = {interrupted, const_cast<DecodeDeadline*>(&deadline)};
  format_->io_open = refuse_io_open;
  format_->format_whitelist = av_strdup(kDemuxerWhitelist);
  format_->max_streams = 64;
  // On failure avformat_open_input frees the context (not the custom AVIO).
  const int opened = avformat_open_input(&format_, nullptr, input_format, nullptr);
  if (opened < 0) {
    format_ = nullptr;
    release();
    deadline.check();
    std::string kind = std::string(input_format->long_name);
    fail(ErrorCode::kCorrupt, "the video file is damaged or truncated (" + kind +
                                  " header: " + error_text(opened) + ")");
  }
  const std::string demuxer = input_format->name;
  if (demuxer == "gif") {
    name_ = "gif";
  } else if (demuxer == "matroska,webm") {
    name_ = matroska_doctype_is_webm(bytes) ? "webm" : "matroska";
    seekable_ = true;
  } else {
    name_ = mov_brand(format_);
    seekable_ = true;
  }
}

Container::~Container() {
  release();
}

void Container::release() {
  if (format_) avformat_close_input(&format_);
  if (io_) {
    av_freep(&io_->buffer);
    avio_context_free(&io_);
  }
}

}  // namespace qvl::media::ffmpeg
