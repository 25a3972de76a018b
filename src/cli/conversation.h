// Building a GenerationRequest from the command line: a question with --image files, or an
// OpenAI-style messages file whose image and video parts are file:// paths, plain paths or data:
// URIs.
#pragma once

#include <string>
#include <vector>

#include "qvl/engine.h"

namespace qvl::cli {

// Reads a JSON file holding a messages array (or an object with "messages"). Image and video
// parts (video_url, and video frame lists) name data: URIs, file:// URLs or paths, relative ones
// resolved against the file's folder.
GenerationRequest request_from_messages_file(const std::string& path, size_t max_image_bytes,
                                             size_t max_video_bytes);

// One user turn: the images (in order) followed by the question; optional system turn.
GenerationRequest request_from_question(const std::string& question,
                                        const std::vector<std::string>& image_paths,
                                        const std::string& system, size_t max_image_bytes);

}  // namespace qvl::cli
