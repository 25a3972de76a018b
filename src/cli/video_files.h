// Videos on the command line: `qvl run --video FILE` puts files into the question's user turn,
// before its text (after any --image), as the chat template shows a video part; `qvl run` and
// `qvl batch` share the sampling flags.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "qvl/engine.h"

namespace qvl::cli {

// --video-fps, --video-max-frames, --video-max-pixels: every video's sampling (0: the engine's
// defaults, docs/video-model.md).
struct VideoFlags {
  double fps = 0;
  int64_t max_frames = 0;
  int64_t max_pixels = 0;

  void add_to(CLI::App& cmd);
  // Sets the engine's defaults (a request may still ask for a rate up to the engine's cap).
  void apply(EngineOptions& options) const;
};

// Reads each file (refusing one above max_bytes before reading it) into request.videos and adds
// its part to the last user message, before that message's text. Throws qvl::Error naming the
// file.
void add_video_files(GenerationRequest& request, const std::vector<std::string>& paths,
                     size_t max_bytes);

}  // namespace qvl::cli
