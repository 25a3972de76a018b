// The prompt of a conversation with pictures and videos: each video's placeholder becomes a
// "<t seconds>" timestamp and its own vision_start/pads/vision_end per frame pair (transformers'
// Qwen3VLProcessor), the text is tokenized, and every pad run expanded to its token count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/image_features.h"
#include "model/config.h"
#include "model/rope_index.h"
#include "qvl/engine.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

// A picture or a video of a request, in order of appearance in the messages.
struct VisualRef {
  bool video = false;
  int index = -1;  // into GenerationRequest::images or ::videos
};
std::vector<VisualRef> visual_order(const std::vector<Message>& messages);

struct VisualPrompt {
  std::vector<int64_t> ids;
  std::vector<ImageGrid> grids;    // one per pad run, for compute_rope_positions
  std::vector<int64_t> run_owner;  // per pad run: index into the features
  int64_t image_tokens = 0;
  int64_t video_tokens = 0;
};

// The rendered prompt's video placeholders with their frame pairs' timestamps written out.
// timestamps: per video in order of appearance. Throws when the counts differ.
std::string expand_video_placeholders(const std::string& prompt_text,
                                      const std::vector<std::vector<double>>& timestamps);

// prompt_text: render_prompt's text; features[k] are those of order[k]. Throws
// kInvalidArgument when the pads in the text do not match (e.g. message text spelling a pad).
VisualPrompt build_visual_prompt(const Tokenizer& tokenizer, const ModelConfig& config,
                                 const std::string& prompt_text,
                                 const std::vector<VisualRef>& order,
                                 const std::vector<SharedImageFeatures>& features);

}  // namespace qvl
