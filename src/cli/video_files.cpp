#include "cli/video_files.h"

#include <algorithm>

#include "base/error.h"
#include "base/mapped_file.h"

namespace qvl::cli {

void VideoFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--video-fps", fps, "Video frames sampled per second (default 2)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--video-max-frames", max_frames, "Most frames sampled from a video (default 128)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--video-max-pixels", max_pixels,
                 "Most pixels of all of a video's frames together (default 8388608 = 4096 "
                 "tokens)")
      ->check(CLI::NonNegativeNumber);
}

void VideoFlags::apply(EngineOptions& options) const {
  options.video_fps = fps;
  options.video_max_frames = max_frames;
  options.video_max_pixels = max_pixels;
}

void add_video_files(GenerationRequest& request, const std::vector<std::string>& paths,
                     size_t max_bytes) {
  if (paths.empty()) return;
  auto user = std::find_if(request.messages.rbegin(), request.messages.rend(),
                           [](const Message& m) { return m.role == "user"; });
  if (user == request.messages.rend()) {
    fail(ErrorCode::kInvalidArgument, "--video needs a question (a user turn) to attach to");
  }
  std::vector<ContentPart> parts;
  for (const std::string& path : paths) {
    const MappedFile file(path);  // the size is known before any byte is read
    if (file.size() > max_bytes) {
      fail(ErrorCode::kResourceExhausted, path + " is " + std::to_string(file.size()) +
                                              " bytes; videos are limited to " +
                                              std::to_string(max_bytes));
    }
    if (file.size() == 0) fail(ErrorCode::kInvalidArgument, path + " is empty");
    VideoInput video;
    video.bytes.assign(file.data(), file.data() + file.size());
    ContentPart part;
    part.kind = ContentPart::Kind::kVideo;
    part.video_index = static_cast<int>(request.videos.size());
    request.videos.push_back(std::move(video));
    parts.push_back(part);
  }
  // Pictures first, then videos, then the text.
  std::vector<ContentPart>& existing = user->parts;
  if (user->content_is_string) user->content_is_string = false;
  auto text = std::find_if(existing.begin(), existing.end(),
                           [](const ContentPart& p) { return p.kind == ContentPart::Kind::kText; });
  existing.insert(text, parts.begin(), parts.end());
}

}  // namespace qvl::cli
