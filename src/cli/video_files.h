// `qvl run --video FILE`: video files put into the question's user turn, before its text (after
// any --image), as the chat template shows a video part.
#pragma once

#include <string>
#include <vector>

#include "qvl/engine.h"

namespace qvl::cli {

// Reads each file (refusing one above max_bytes before reading it) into request.videos and adds
// its part to the last user message, before that message's text. Throws qvl::Error naming the
// file.
void add_video_files(GenerationRequest& request, const std::vector<std::string>& paths,
                     size_t max_bytes);

}  // namespace qvl::cli
