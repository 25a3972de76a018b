// Video parity in exact mode against transformers' goldens (QVL_GOLDEN_DIR: a folder made by
// scripts/hfref/make_video_goldens.sh, whose manifest names the model folder): vision
// embeddings and DeepStack features of every frame pair, the timestamps text, prompt ids, 3-D
// positions, logits and greedy tokens, for every case with a video. Everything after the
// processor's resize is compared, from the golden's resized frames (docs/video.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include "base/content_hash.h"
#include "base/mapped_file.h"
#include "engine/prompt.h"
#include "engine/prompt_embeddings.h"
#include "engine/video_features.h"
#include "engine/visual_prompt.h"
#include "golden.h"
#include "image/patchify.h"
#include "image/video_preprocess.h"
#include "model/config.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"
#include "model/weight_types.h"
#include "tokenizer/tokenizer.h"

namespace qvl::testing {
namespace {

constexpr double kTol = 1e-4;

bool has_video_cases() {
  const nlohmann::json manifest = load_manifest();
  for (const auto& c : manifest["cases"])
    if (c.contains("videos") && !c["videos"].empty()) return true;
  return false;
}

// The golden folder when it holds the model, else the one its manifest names (relative to it).
std::string model_dir() {
  const std::string dir = golden_dir();
  const nlohmann::json m = load_manifest();
  if (std::filesystem::exists(dir + "/config.json") || !m.contains("model_folder")) return dir;
  const std::string named = dir + "/" + m["model_folder"].get<std::string>();
  if (std::filesystem::exists(named)) return named;
  // The shared test data elsewhere (QVL_TESTDATA_DIR set to another place): the same folder name.
  return std::string(QVL_TESTDATA_DIR) + "/" +
         std::filesystem::path(named).lexically_normal().filename().string();
}

struct Model {
  std::string dir = model_dir();
  ModelConfig config = load_model_config(dir);
  WeightStore store = WeightStore::open_folder(dir);
  TextWeights text = load_text_weights(config, store);
  VisionWeights vision = load_vision_weights(config.vision, store);
  Tokenizer tokenizer = Tokenizer::from_model_dir(dir);
};

Model& model() {
  static Model m;
  return m;
}

std::vector<RgbImage> frames_of(const TensorView& t) {
  std::vector<RgbImage> out;
  const size_t bytes = static_cast<size_t>(t.shape[1] * t.shape[2] * 3);
  for (int64_t i = 0; i < t.shape[0]; ++i) {
    RgbImage im;
    im.height = static_cast<int>(t.shape[1]);
    im.width = static_cast<int>(t.shape[2]);
    im.pixels.assign(t.data + i * bytes, t.data + (i + 1) * bytes);
    out.push_back(std::move(im));
  }
  return out;
}

// The golden processor's settings for one video: Qwen3-VL's, with the case's request.
VideoPreprocessConfig case_config(const nlohmann::json& request) {
  VideoPreprocessConfig c = video_preprocess_config_for(model().dir, PreprocessConfig{});
  if (request.contains("fps")) c.sampling.fps = request["fps"].get<double>();
  if (request.contains("max_frames")) c.sampling.max_frames = request["max_frames"].get<int64_t>();
  if (request.contains("size")) {
    c.min_pixels = request["size"]["shortest_edge"].get<int64_t>();
    c.max_pixels = request["size"]["longest_edge"].get<int64_t>();
  }
  return c;
}

std::vector<Message> case_messages(const GoldenCase& c) {
  std::vector<Message> out;
  int images = 0, videos = 0;
  for (const auto& m : c.manifest["messages"]) {
    Message msg;
    msg.role = m["role"].get<std::string>();
    if (m["content"].is_string()) {
      msg.parts.push_back({ContentPart::Kind::kText, m["content"].get<std::string>(), -1});
    } else {
      msg.content_is_string = false;
      for (const auto& p : m["content"]) {
        ContentPart part;
        if (p["type"] == "image") {
          part.kind = ContentPart::Kind::kImage;
          part.image_index = images++;
        } else if (p["type"] == "video") {
          part.kind = ContentPart::Kind::kVideo;
          part.video_index = videos++;
        } else {
          part.text = p["text"].get<std::string>();
        }
        msg.parts.push_back(part);
      }
    }
    out.push_back(std::move(msg));
  }
  return out;
}

void record(const std::string& name, const std::string& key, double d) {
  ::testing::Test::RecordProperty(key, std::to_string(d));
  std::printf("[parity] %s %s max|diff| = %.3g\n", name.c_str(), key.c_str(), d);
  EXPECT_LE(d, kTol) << key;
}

void check_video_case(const std::string& case_name) {
  GoldenCase c;
  for (auto& g : load_golden_cases())
    if (g.name == case_name) c = g;
  if (!c.manifest.contains("videos") || c.manifest["videos"].empty()) return;
  Model& m = model();
  const VisionEncoder encoder(m.config.vision, m.vision);
  const std::vector<Message> messages = case_messages(c);
  const std::vector<VisualRef> order = visual_order(messages);

  // Vision: each picture from its resized pixels, each video from its resized frames.
  std::vector<SharedImageFeatures> features;
  std::vector<float> video_embeds, image_embeds;
  std::vector<std::vector<float>> video_deepstack(m.config.vision.deepstack_visual_indexes.size());
  for (const VisualRef& ref : order) {
    auto f = std::make_shared<ImageFeatures>();
    if (ref.video) {
      const std::string k = "video." + std::to_string(ref.index) + ".";
      const auto& meta = c.manifest["videos"][ref.index];
      const VideoPreprocessConfig config = case_config(meta["request"]);
      const PreprocessedVideo video =
          video_from_resized_frames(frames_of(c.tensors->get(k + "resized_u8")),
                                    c.i64(k + "frame_indices"), meta["fps"].get<double>(), config);
      *f = encode_prepared_video(encoder, video, config);
      video_embeds.insert(video_embeds.end(), f->vision.embeds.begin(), f->vision.embeds.end());
      for (size_t d = 0; d < video_deepstack.size(); ++d)
        video_deepstack[d].insert(video_deepstack[d].end(), f->vision.deepstack[d].begin(),
                                  f->vision.deepstack[d].end());
    } else {
      const TensorView& u8 = c.tensors->get("image." + std::to_string(ref.index) + ".resized_u8");
      RgbImage img;
      img.height = static_cast<int>(u8.shape[0]);
      img.width = static_cast<int>(u8.shape[1]);
      img.pixels.assign(u8.data, u8.data + u8.nbytes);
      const PatchLayout layout;
      std::vector<float> pixels(static_cast<size_t>(img.height / 16 * (img.width / 16)) *
                                layout.patch_dim());
      normalize_and_patchify(img, layout, Normalization{}, pixels.data());
      f->grid = {1, img.height / 16, img.width / 16};
      f->vision = encoder.encode(pixels.data(), f->grid.h, f->grid.w);
      image_embeds.insert(image_embeds.end(), f->vision.embeds.begin(), f->vision.embeds.end());
    }
    features.push_back(f);
  }
  const auto want = c.f32("vision.video_embeds");
  ASSERT_EQ(want.size(), video_embeds.size());
  record(c.name, "vision.video_embeds",
         max_abs_diff(video_embeds.data(), want.data(), want.size()));
  for (size_t d = 0; d < video_deepstack.size(); ++d) {
    const auto ds = c.f32("vision.video_deepstack." + std::to_string(d));
    ASSERT_EQ(ds.size(), video_deepstack[d].size());
    record(c.name, "vision.video_deepstack." + std::to_string(d),
           max_abs_diff(video_deepstack[d].data(), ds.data(), ds.size()));
  }
  if (c.has("vision.image_embeds")) {
    const auto wi = c.f32("vision.image_embeds");
    ASSERT_EQ(wi.size(), image_embeds.size());
    record(c.name, "vision.image_embeds", max_abs_diff(image_embeds.data(), wi.data(), wi.size()));
  }

  // Timestamps text, prompt ids and positions.
  const std::string prompt_text = render_prompt(messages);
  EXPECT_EQ(prompt_text, c.manifest["prompt_text"].get<std::string>());
  std::vector<std::vector<double>> stamps;
  for (const auto& f : features)
    if (!f->pair_timestamps.empty()) stamps.push_back(f->pair_timestamps);
  EXPECT_EQ(expand_video_placeholders(prompt_text, stamps),
            c.manifest["expanded_text"].get<std::string>());
  const VisualPrompt prompt =
      build_visual_prompt(m.tokenizer, m.config, prompt_text, order, features);
  ASSERT_EQ(prompt.ids, c.i64("input_ids"));
  EXPECT_EQ(prompt.video_tokens, c.manifest["n_video_tokens"].get<int64_t>());
  const RopePositions pos =
      compute_rope_positions(prompt.ids, prompt.grids, m.config.image_token_id,
                             m.config.vision.spatial_merge_size, m.config.video_token_id);
  EXPECT_EQ(pos.pos, c.i64("position_ids"));
  EXPECT_EQ(pos.delta, c.i64("rope_deltas").at(0));

  // Logits: the prompt through the decoder with the features at the pads.
  const TextConfig& tc = m.config.text;
  const int64_t n = static_cast<int64_t>(prompt.ids.size()), h = tc.hidden_size;
  TextDecoder decoder(tc, m.text);
  const PromptEmbeddings embeddings(decoder, m.config, prompt.ids, features);
  std::vector<float> x(n * h), final_norm(n * h);
  RangeFeatureAdds adds;
  embeddings.make_rows(0, n, x.data(), adds);
  KVCache cache = decoder.new_cache();
  decoder.forward(x.data(), n, pos.pos.data(), cache, adds.or_null(), final_norm.data());
  std::vector<float> logits(tc.vocab_size);
  decoder.logits(final_norm.data() + (n - 1) * h, 1, logits.data());
  record(c.name, "logits.last",
         max_abs_diff(logits.data(), c.f32("logits.last").data(), logits.size()));
  const auto positions = c.i64("logits.positions"), top_ids = c.i64("logits.top10_ids");
  const auto top_vals = c.f32("logits.top10_vals");
  double top_worst = 0;
  for (size_t p = 0; p < positions.size(); ++p) {
    decoder.logits(final_norm.data() + positions[p] * h, 1, logits.data());
    for (size_t j = 0; j < 10; ++j)
      top_worst = std::max<double>(top_worst,
                                   std::fabs(logits[top_ids[p * 10 + j]] - top_vals[p * 10 + j]));
  }
  record(c.name, "logits.top10_vals", top_worst);

  // Greedy decoding with the KV cache.
  const auto tokens = c.i64("gen.tokens"), step_ids = c.i64("gen.step_top5_ids");
  const auto step_vals = c.f32("gen.step_top5_vals"), margins = c.f32("gen.step_margin");
  std::vector<float> hidden(final_norm.begin() + (n - 1) * h, final_norm.end());
  double step_worst = 0;
  for (size_t s = 0; s < tokens.size(); ++s) {
    decoder.logits(hidden.data(), 1, logits.data());
    for (size_t j = 0; j < 5; ++j)
      step_worst = std::max<double>(step_worst,
                                    std::fabs(logits[step_ids[s * 5 + j]] - step_vals[s * 5 + j]));
    if (margins[s] >= 1e-3f) {
      EXPECT_EQ(std::max_element(logits.begin(), logits.end()) - logits.begin(), tokens[s])
          << "greedy step " << s;
    }
    const int64_t next = tokens[s], p = n + static_cast<int64_t>(s) + pos.delta;
    const int64_t p3[3] = {p, p, p};
    decoder.embed(&next, 1, x.data());
    decoder.forward(x.data(), 1, p3, cache, nullptr, hidden.data());
  }
  record(c.name, "gen.step_top5_vals", step_worst);
}

// A 24-bit BMP of a frame (the decoder reads it back exactly).
std::vector<uint8_t> bmp_of(const RgbImage& im) {
  const uint32_t row = (static_cast<uint32_t>(im.width) * 3 + 3) & ~3u;
  const uint32_t size = 54 + row * static_cast<uint32_t>(im.height);
  std::vector<uint8_t> b(size, 0);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  b[0] = 'B';
  b[1] = 'M';
  put32(2, size);
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(im.width));
  put32(22, static_cast<uint32_t>(im.height));
  b[26] = 1;
  b[28] = 24;
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x)
      for (int c = 0; c < 3; ++c)
        b[54 + (im.height - 1 - y) * row + x * 3 + c] =
            im.pixels[(static_cast<size_t>(y) * im.width + x) * 3 + 2 - c];
  return b;
}

// End to end through the public API on case vi (frames that need no resize): its sampled frames
// as a frame list at 1.6 frames per second keep all four and give the golden's timestamps
// (0.3125 -> "0.3", 1.5625 -> "1.6"), so prompt ids and greedy tokens are the golden's; the same
// request again takes the video's features from the cache.
TEST(VideoParity, EngineFrameListAndFeatureCache) {
  if (!has_video_cases()) GTEST_SKIP() << golden_dir() << " has no video cases";
  GoldenCase c;
  for (auto& g : load_golden_cases())
    if (g.name == "vi_short_clip") c = g;
  if (c.name.empty()) GTEST_SKIP() << "no case vi_short_clip in " << golden_dir();
  EngineOptions o;
  o.model_dir = model().dir;
  o.quant = "exact";
  o.video_max_frames = 768;  // the reference processor's settings
  o.video_max_pixels = 25165824;
  const auto engine = Engine::load(o);
  GenerationRequest req;
  req.messages = case_messages(c);
  VideoInput video;
  for (const RgbImage& f : frames_of(c.tensors->get("video.0.sampled_u8")))
    video.frames.push_back(bmp_of(f));
  video.frames_fps = 1.6;
  req.videos.push_back(video);
  req.sampling.temperature = 0;
  req.sampling.max_tokens = 16;
  req.sampling.ignore_eos = true;
  for (int round = 0; round < 2; ++round) {
    const GenerationResult r = engine->generate(req);
    EXPECT_EQ(r.prompt_ids, c.i64("input_ids"));
    EXPECT_EQ(r.completion_ids, c.i64("gen.tokens"));
    EXPECT_EQ(r.stats.video_tokens, c.manifest["n_video_tokens"].get<int64_t>());
    EXPECT_EQ(r.stats.image_tokens, 0);
  }
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.image_cache_misses, 1u);
  EXPECT_EQ(stats.image_cache_hits, 1u);
}

TEST(VideoParity, VisionPromptPositionsLogitsAndGreedyTokens) {
  if (!has_video_cases()) GTEST_SKIP() << golden_dir() << " has no video cases";
  // The goldens were made with these very weights (the manifest names the folder and its hash).
  const nlohmann::json manifest = load_manifest();
  if (manifest.contains("model_sha256")) {
    const MappedFile weights(model().dir + "/model.safetensors");
    const Digest256 d = sha256(weights.data(), weights.size());
    std::string hex;
    for (uint8_t b : d) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
    ASSERT_EQ(hex, manifest["model_sha256"].get<std::string>()) << model().dir;
  }
  for_each_golden_case(check_video_case);
}

// Per-token cosine (minimum) and relative L2 error of rows of `width`.
std::pair<double, double> agreement(const std::vector<float>& exact,
                                    const std::vector<float>& other, int64_t width) {
  double min_cos = 1, diff = 0, norm = 0;
  for (size_t r = 0; r + width <= exact.size(); r += width) {
    double dot = 0, ee = 0, oo = 0;
    for (int64_t i = 0; i < width; ++i) {
      dot += double{exact[r + i]} * other[r + i];
      ee += double{exact[r + i]} * exact[r + i];
      oo += double{other[r + i]} * other[r + i];
      diff += (double{exact[r + i]} - other[r + i]) * (double{exact[r + i]} - other[r + i]);
    }
    min_cos = std::min(min_cos, dot / std::sqrt(ee * oo));
    norm += ee;
  }
  return {min_cos, std::sqrt(diff / norm)};
}

// The fast weight types on video frame pairs (the whole patch kernel packed in bf16, the blocks
// in bf16 or q8) stay within the image tower's q8 bounds of exact (tests/model/
// vision_quant_test.cpp: min cosine 0.9995, relative L2 0.02), DeepStack features too.
TEST(VideoParity, FastTypesFollowExactOnFramePairs) {
  if (!has_video_cases()) GTEST_SKIP() << golden_dir() << " has no video cases";
  Model& m = model();
  const VisionWeights bf16 = load_vision_weights(m.config.vision, m.store, weight_types_for("q8"));
  const VisionWeights q8 =
      load_vision_weights(m.config.vision, m.store, weight_types_for("q8", "", "q8"));
  const int64_t width = m.config.vision.out_hidden_size;
  for (const GoldenCase& c : load_golden_cases()) {
    if (!c.has("video.0.resized_u8")) continue;
    SCOPED_TRACE(c.name);
    const auto& meta = c.manifest["videos"][0];
    const VideoPreprocessConfig config = case_config(meta["request"]);
    const PreprocessedVideo video = video_from_resized_frames(
        frames_of(c.tensors->get("video.0.resized_u8")), c.i64("video.0.frame_indices"),
        meta["fps"].get<double>(), config);
    const ImageFeatures exact =
        encode_prepared_video(VisionEncoder(m.config.vision, m.vision), video, config);
    for (const VisionWeights* w : {&bf16, &q8}) {
      const ImageFeatures fast =
          encode_prepared_video(VisionEncoder(m.config.vision, *w), video, config);
      const auto [cos, rel] = agreement(exact.vision.embeds, fast.vision.embeds, width);
      std::printf("[video quant] %s %s: min cosine %.6f, relative L2 %.2e\n", c.name.c_str(),
                  w == &bf16 ? "bf16" : "q8", cos, rel);
      EXPECT_GE(cos, 0.9995);
      EXPECT_LE(rel, 0.02);
      for (size_t d = 0; d < exact.vision.deepstack.size(); ++d) {
        const auto [dcos, drel] =
            agreement(exact.vision.deepstack[d], fast.vision.deepstack[d], width);
        EXPECT_GE(dcos, 0.9995) << "deepstack " << d;
        EXPECT_LE(drel, 0.02) << "deepstack " << d;
      }
    }
  }
}

}  // namespace
}  // namespace qvl::testing
