// Test videos: small clips whose every frame says which frame it is, encoded at test time by the
// ffmpeg program (a test-only Debian package, scripts/setup.sh) from raw RGB frames written here,
// and cached in the build folder. Frame k shows k's low 8 bits as eight vertical stripes in its
// top half (white 1, black 0, most significant bit left) and a red (left) and a blue (right)
// block in its bottom half, so a test can read which frame it got and which way up it is.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "image/rgb_image.h"

namespace qvl::media::testing {

struct ClipSpec {
  std::string name;  // file name in the cache, with the container's extension
  int width = 64;
  int height = 48;
  int frames = 25;
  int fps = 10;
  std::string codec_args;  // ffmpeg output options (codec, GOP, metadata, filters)
  std::string input_args;  // extra ffmpeg input options
};

inline RgbImage coded_frame(int index, int width, int height) {
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.resize(size_t(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &image.pixels[(size_t(y) * width + x) * 3];
      if (y < height / 2) {
        const int bit = 7 - x * 8 / width;
        const uint8_t level = ((index >> bit) & 1) ? 255 : 0;
        p[0] = p[1] = p[2] = level;
      } else if (x < width / 2) {
        p[0] = 230, p[1] = 20, p[2] = 20;
      } else {
        p[0] = 20, p[1] = 20, p[2] = 230;
      }
    }
  }
  return image;
}

// Reads the frame number back from an upright frame (the stripes' centres, a quarter down).
inline int read_frame_code(const RgbImage& image) {
  int code = 0;
  const int y = image.height / 4;
  for (int bit = 7; bit >= 0; --bit) {
    const int x = (7 - bit) * image.width / 8 + image.width / 16;
    const uint8_t* p = &image.pixels[(size_t(y) * image.width + x) * 3];
    const int luma = (p[0] + p[1] + p[2]) / 3;
    if (luma > 128) code |= 1 << bit;
  }
  return code;
}

// The mean colour of a small block around (x, y), to check where the red and blue blocks are.
inline std::vector<int> colour_at(const RgbImage& image, int x, int y) {
  std::vector<int> sum(3, 0);
  int n = 0;
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      const int px = std::clamp(x + dx, 0, image.width - 1);
      const int py = std::clamp(y + dy, 0, image.height - 1);
      for (int c = 0; c < 3; ++c) sum[c] += image.pixels[(size_t(py) * image.width + px) * 3 + c];
      ++n;
    }
  }
  for (int& s : sum) s /= n;
  return sum;
}

inline std::filesystem::path clip_dir() {
  return std::filesystem::path(QVL_BINARY_DIR) / "tests" / "media" / "video_clips";
}

// The cache file of a clip: its name with a hash of how it is made, so that a changed recipe
// makes a new file (path() of the result names it for ffmpeg_frame and derived clips).
inline std::string cached_name(const std::string& name, const std::string& recipe) {
  const std::filesystem::path path(name);
  char hash[20];
  std::snprintf(hash, sizeof hash, "%08zx", std::hash<std::string>{}(recipe)&0xFFFFFFFFu);
  return path.stem().string() + "-" + hash + path.extension().string();
}

inline std::filesystem::path clip_path(const ClipSpec& spec) {
  return clip_dir() /
         cached_name(spec.name, spec.codec_args + "|" + spec.input_args + "|" +
                                    std::to_string(spec.width) + "x" + std::to_string(spec.height) +
                                    "|" + std::to_string(spec.frames) + "@" +
                                    std::to_string(spec.fps));
}

inline std::filesystem::path file_path(const std::string& name, const std::string& args) {
  return clip_dir() / cached_name(name, args);
}

inline std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Runs ffmpeg with `frames` coded frames on its standard input; returns the encoded file.
// Clips are cached by name; concurrent test processes write a private file and rename it.
inline std::string make_clip(const ClipSpec& spec) {
  const auto dir = clip_dir();
  std::filesystem::create_directories(dir);
  const auto path = clip_path(spec);
  if (std::filesystem::exists(path)) return read_file_bytes(path);
  const std::string extension = std::filesystem::path(spec.name).extension().string();
  const auto partial = dir / (spec.name + "." + std::to_string(::getpid()) + extension);
  const auto log = dir / (spec.name + ".log");
  std::ostringstream command;
  command << "ffmpeg -hide_banner -loglevel error -nostdin -y -f rawvideo -pix_fmt rgb24 -s "
          << spec.width << "x" << spec.height << " -r " << spec.fps << " " << spec.input_args
          << " -i pipe:0 " << spec.codec_args << " '" << partial.string() << "' > '" << log.string()
          << "' 2>&1";
  FILE* pipe = ::popen(command.str().c_str(), "w");
  if (!pipe) {
    ADD_FAILURE() << "cannot start ffmpeg (scripts/setup.sh installs it)";
    return "";
  }
  for (int k = 0; k < spec.frames; ++k) {
    const RgbImage frame = coded_frame(k, spec.width, spec.height);
    std::fwrite(frame.pixels.data(), 1, frame.pixels.size(), pipe);
  }
  const int status = ::pclose(pipe);
  if (status != 0) {
    ADD_FAILURE() << "ffmpeg failed making " << spec.name << ": " << read_file_bytes(log)
                  << " (command: " << command.str() << ")";
    return "";
  }
  std::filesystem::rename(partial, path);
  return read_file_bytes(path);
}

// Runs an ffmpeg command line that makes `name` from no input of ours (audio, still images).
inline std::string make_file(const std::string& name, const std::string& args) {
  const auto dir = clip_dir();
  std::filesystem::create_directories(dir);
  const auto path = file_path(name, args);
  if (std::filesystem::exists(path)) return read_file_bytes(path);
  const auto partial = dir / (std::to_string(::getpid()) + "." + name);
  const std::string command = "ffmpeg -hide_banner -loglevel error -nostdin -y " + args + " '" +
                              partial.string() + "' > /dev/null 2>&1";
  if (std::system(command.c_str()) != 0) {
    ADD_FAILURE() << "ffmpeg failed: " << command;
    return "";
  }
  std::filesystem::rename(partial, path);
  return read_file_bytes(path);
}

// Frame `index` of a cached clip as the ffmpeg program decodes it (display matrix applied).
inline RgbImage ffmpeg_frame(const std::filesystem::path& path, int index, int width, int height) {
  const std::string command = "ffmpeg -v error -nostdin -i '" + path.string() +
                              "' -vf 'select=eq(n\\," + std::to_string(index) +
                              ")' -frames:v 1 -f rawvideo -pix_fmt rgb24 -";
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.resize(size_t(width) * height * 3);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {};
  const size_t got = std::fread(image.pixels.data(), 1, image.pixels.size(), pipe);
  ::pclose(pipe);
  if (got != image.pixels.size()) image.pixels.resize(got);
  return image;
}

// Undoes a clockwise turn, to read the frame code of a turned frame.
inline RgbImage rotate_back(const RgbImage& image, int degrees) {
  RgbImage out = image;
  for (int turn = 0; turn < (360 - degrees) % 360 / 90; ++turn) {
    RgbImage turned;
    turned.width = out.height;
    turned.height = out.width;
    turned.pixels.resize(out.pixels.size());
    for (int y = 0; y < out.height; ++y) {
      for (int x = 0; x < out.width; ++x) {
        const size_t to = (size_t(x) * turned.width + (out.height - 1 - y)) * 3;
        std::memcpy(&turned.pixels[to], &out.pixels[(size_t(y) * out.width + x) * 3], 3);
      }
    }
    out = std::move(turned);
  }
  return out;
}

// The clips the tests use. x264 at "veryfast" keeps B-frames (ultrafast has none).
inline const std::string kX264 = "-c:v libx264 -preset veryfast -crf 12 -pix_fmt yuv420p";

// Odd frame count, two B-frames and a keyframe every 8 frames (seeking and reordering).
inline ClipSpec mp4_h264() {
  return {"h264.mp4", 64, 48, 25, 10, kX264 + " -g 8 -bf 2", ""};
}
inline ClipSpec mov_h264() {
  return {"h264.mov", 64, 48, 12, 10, kX264, ""};
}
inline ClipSpec mkv_h264() {
  return {"h264.mkv", 64, 48, 20, 10, kX264 + " -g 8 -bf 2", ""};
}
inline ClipSpec webm_vp8() {
  return {"vp8.webm", 64, 48, 16, 8, "-c:v libvpx -crf 4 -b:v 2M -g 6", ""};
}
inline ClipSpec webm_vp9() {
  return {"vp9.webm", 64, 48,
          21,         10, "-c:v libvpx-vp9 -crf 10 -b:v 0 -deadline realtime -cpu-used 8 -g 8",
          ""};
}
inline ClipSpec mp4_hevc() {
  return {"hevc.mp4",
          64,
          48,
          12,
          10,
          "-c:v libx265 -preset ultrafast -x265-params log-level=none -crf 8 -pix_fmt yuv420p "
          "-tag:v hvc1",
          ""};
}
// MPEG-4 Part 2 in MOV: the sample entry leaves the frame size to the bitstream.
inline ClipSpec mov_mpeg4() {
  return {"mpeg4.mov", 64, 48, 12, 10, "-c:v mpeg4 -q:v 2", ""};
}
inline ClipSpec mkv_av1() {
  return {"av1.mkv", 64, 48, 10, 10, "-c:v libaom-av1 -cpu-used 8 -crf 20 -g 5", ""};
}
inline ClipSpec gif_clip() {
  return {"frames.gif", 64, 48, 9, 10, "-c:v gif", ""};
}
inline ClipSpec webp_clip() {
  return {"frames.webp", 64, 48, 7, 5, "-c:v libwebp_anim -lossless 1 -loop 0", ""};
}
// Portrait: taller than wide.
inline ClipSpec portrait_mp4() {
  return {"portrait.mp4", 48, 80, 11, 10, kX264, ""};
}
// Variable frame rate: frames 0-9 at 0.0-0.9 s, then a half-second gap, 10-19 at 1.5-2.4 s.
inline ClipSpec vfr_mp4() {
  return {"vfr.mp4",
          64,
          48,
          20,
          10,
          "-vf \"setpts='round((N+if(gte(N,10),5,0))/10/TB)'\" -fps_mode passthrough " + kX264,
          ""};
}
// Repeated timestamps (a muxer that rounds): setpts truncates 3/10/(1/10) to 2, so frames 2 and
// 3 (and others) share a presentation time, as in some real files.
inline ClipSpec repeated_pts_mp4() {
  return {"repeated_pts.mp4",
          64,
          48,
          20,
          10,
          "-vf \"setpts='N/10/TB'\" -fps_mode passthrough " + kX264 + " -bf 0",
          ""};
}
// Long enough that seeking skips keyframes: 160 frames, a keyframe every 20.
inline ClipSpec long_mp4() {
  return {"long.mp4", 64, 48, 160, 20, kX264 + " -g 20 -bf 2", ""};
}

// A clip with a display matrix turning it clockwise by `degrees` (set on a stream copy, which is
// where FFmpeg 5.1's muxer writes the legacy "rotate" tag as a matrix).
// The H.264 clip cut at 1.0 s by a stream copy: it starts at the keyframe before (frame 8) with an
// edit list that hides frames 8 and 9, so the file declares 17 frames and shows 15 (10..24).
inline std::string edit_list_mp4() {
  make_clip(mp4_h264());
  return make_file("edit_list.mp4", "-ss 1.0 -i '" + clip_path(mp4_h264()).string() + "' -c copy");
}

inline std::string rotated_mp4_args(int degrees) {
  return "-i '" + clip_path(mp4_h264()).string() +
         "' -c copy -metadata:s:v:0 rotate=" + std::to_string(degrees);
}
inline std::string rotated_mp4(int degrees) {
  make_clip(mp4_h264());
  return make_file("rotate" + std::to_string(degrees) + ".mp4", rotated_mp4_args(degrees));
}
inline std::filesystem::path rotated_mp4_path(int degrees) {
  return file_path("rotate" + std::to_string(degrees) + ".mp4", rotated_mp4_args(degrees));
}

}  // namespace qvl::media::testing
