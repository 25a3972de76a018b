// Request bodies and prompts shared by the load-test scenarios.
#include <openssl/evp.h>

#include <random>

#include "cli/loadtest_scenarios.h"
#include "cli/synthetic_image.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

std::string base64(const std::vector<uint8_t>& bytes) {
  std::string text(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()), bytes.data(),
                                     static_cast<int>(bytes.size()));
  text.resize(static_cast<size_t>(length));
  return text;
}

const char* const kFollowUps[] = {
    "Now look again at the picture and tell me which of the coloured shapes is the largest one.",
    "Which colours appear in the background of the picture, and how do they change across it?",
    "How many separate shapes can you count in the image, and where is each of them placed?",
    "Is there anything in this picture that looks like text, a sign or a label? Describe it.",
    "If you had to give this picture a short title for a gallery, what would it be and why?",
    "Describe the triangle in the picture: its colour, its size and where it sits in the frame.",
};

const char* const kLongAnswerTopics[] = {
    "the history of the printing press",    "how bridges are designed and built",
    "the water cycle on our planet",        "how a compiler turns code into programs",
    "the life of honey bees in a hive",     "how trains changed travel in Europe",
    "the way volcanoes form and erupt",     "how bread is baked in a bakery",
    "the migration of birds across oceans", "how the human heart pumps blood",
};

}  // namespace

LoadContext::LoadContext(const LoadtestOptions& options, std::string model_id)
    : options_(options),
      client_(options.url, options.api_key, options.request_timeout_seconds),
      model_id_(std::move(model_id)),
      run_seed_((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()) {}

std::string LoadContext::fresh_image_uri() const {
  const uint64_t index = images_made_.fetch_add(1);
  const int size = options_.image_size;
  RgbImage image = synthetic_scene(size, size, static_cast<int>(index & 3));
  // Stamp the first pixels with this run's seed and the image's index: every image is new.
  const uint64_t stamp = run_seed_ ^ (index * 0x9E3779B97F4A7C15ull);
  for (int i = 0; i < 8; ++i) {
    uint8_t* pixel = &image.pixels[static_cast<size_t>(i) * 3];
    pixel[0] = static_cast<uint8_t>(stamp >> (8 * i));
    pixel[1] = static_cast<uint8_t>(index >> (8 * (i % 4)));
    pixel[2] = static_cast<uint8_t>(255 - pixel[0]);
  }
  return "data:image/bmp;base64," + base64(encode_bmp(image));
}

json LoadContext::chat_body(json messages, int max_tokens) const {
  return {{"model", model_id_}, {"messages", std::move(messages)},
          {"stream", true},     {"stream_options", {{"include_usage", true}}},
          {"temperature", 0},   {"max_tokens", max_tokens}};
}

json user_message(const std::string& text, const std::string& image_uri) {
  if (image_uri.empty()) return {{"role", "user"}, {"content", text}};
  return {{"role", "user"},
          {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", image_uri}}}},
                                   {{"type", "text"}, {"text", text}}})}};
}

json assistant_message(const std::string& text) {
  return {{"role", "assistant"}, {"content", text}};
}

std::string follow_up_question(int index) {
  constexpr int kCount = sizeof(kFollowUps) / sizeof(kFollowUps[0]);
  return kFollowUps[index % kCount];
}

std::string long_answer_prompt(int index) {
  constexpr int kCount = sizeof(kLongAnswerTopics) / sizeof(kLongAnswerTopics[0]);
  return "Write a long, detailed essay of at least a thousand words about " +
         std::string(kLongAnswerTopics[index % kCount]) + " (essay number " +
         std::to_string(index + 1) + "). Use several paragraphs and do not stop early.";
}

bool check_response(ScenarioResult& result, const ChatStreamResult& response,
                    const std::string& what, bool refusals_ok) {
  result.count_status(response.status);
  if (response.ok()) return true;
  const bool refused = response.status == 429 || response.status == 503;
  std::string message = what + ": ";
  if (response.status == 0) {
    message += "no response (" + response.error + ")";
  } else {
    message += "HTTP " + std::to_string(response.status) + " (" + response.error + ")";
  }
  if (refused) {
    message += response.status == 429
                   ? " - the server's queue was full; give it more --parallel/--queue"
                   : " - the server was unavailable (loading or shutting down)";
  }
  (refused && refusals_ok ? result.notes : result.failures).push_back(message);
  return false;
}

}  // namespace qvl::cli
