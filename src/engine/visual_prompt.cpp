#include "engine/visual_prompt.h"

#include "base/error.h"
#include "image/video_sampling.h"

namespace qvl {
namespace {

constexpr const char* kVideoPlaceholder = "<|vision_start|><|video_pad|><|vision_end|>";

struct PadRun {
  int64_t pad = 0;
  int64_t count = 0;
};

}  // namespace

std::vector<VisualRef> visual_order(const std::vector<Message>& messages) {
  std::vector<VisualRef> order;
  for (const auto& m : messages)
    for (const auto& p : m.parts) {
      if (p.kind == ContentPart::Kind::kImage) order.push_back({false, p.image_index});
      if (p.kind == ContentPart::Kind::kVideo) order.push_back({true, p.video_index});
    }
  return order;
}

std::string expand_video_placeholders(const std::string& prompt_text,
                                      const std::vector<std::vector<double>>& timestamps) {
  const std::string placeholder = kVideoPlaceholder;
  std::string out;
  size_t from = 0, video = 0;
  for (size_t at; (at = prompt_text.find(placeholder, from)) != std::string::npos;) {
    if (video >= timestamps.size()) {
      fail(ErrorCode::kInvalidArgument,
           "the prompt has more video placeholders than videos (does the text contain "
           "'<|video_pad|>'?)");
    }
    out.append(prompt_text, from, at - from);
    for (double t : timestamps[video]) out += timestamp_text(t) + placeholder;
    ++video;
    from = at + placeholder.size();
  }
  if (video != timestamps.size()) {
    fail(ErrorCode::kInvalidArgument, "the prompt has fewer video placeholders than videos");
  }
  out.append(prompt_text, from, std::string::npos);
  return out;
}

VisualPrompt build_visual_prompt(const Tokenizer& tokenizer, const ModelConfig& config,
                                 const std::string& prompt_text,
                                 const std::vector<VisualRef>& order,
                                 const std::vector<SharedImageFeatures>& features) {
  QVL_CHECK(order.size() == features.size());
  VisualPrompt out;
  std::vector<std::vector<double>> timestamps;
  std::vector<PadRun> runs;
  for (size_t k = 0; k < order.size(); ++k) {
    const ImageFeatures& f = *features[k];
    if (!order[k].video) {
      runs.push_back({config.image_token_id, f.vision.tokens});
      out.grids.push_back(f.grid);
      out.run_owner.push_back(static_cast<int64_t>(k));
      out.image_tokens += f.vision.tokens;
      continue;
    }
    QVL_CHECK(f.grid.t > 0 && f.vision.tokens % f.grid.t == 0 &&
              static_cast<int64_t>(f.pair_timestamps.size()) == f.grid.t);
    timestamps.push_back(f.pair_timestamps);
    for (int64_t t = 0; t < f.grid.t; ++t) {
      runs.push_back({config.video_token_id, f.vision.tokens / f.grid.t});
      out.grids.push_back({1, f.grid.h, f.grid.w});
      out.run_owner.push_back(static_cast<int64_t>(k));
    }
    out.video_tokens += f.vision.tokens;
  }
  const std::string text =
      timestamps.empty() ? prompt_text : expand_video_placeholders(prompt_text, timestamps);
  size_t run = 0;
  for (int32_t id : tokenizer.encode(text)) {
    if (id != config.image_token_id && id != config.video_token_id) {
      out.ids.push_back(id);
      continue;
    }
    const char* kind = id == config.image_token_id ? "image" : "video";
    if (run >= runs.size() || runs[run].pad != id) {
      fail(ErrorCode::kInvalidArgument, std::string("the prompt has more ") + kind +
                                            " placeholders than " + kind +
                                            "s (does the text contain '<|" + kind + "_pad|>'?)");
    }
    out.ids.insert(out.ids.end(), static_cast<size_t>(runs[run].count), id);
    ++run;
  }
  if (run != runs.size()) {
    fail(ErrorCode::kInvalidArgument,
         "the prompt has fewer image or video placeholders than "
         "images and videos");
  }
  return out;
}

}  // namespace qvl
