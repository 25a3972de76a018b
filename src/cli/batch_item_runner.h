// One input of `qvl batch`: its request body goes through the server's translator
// (parse_chat_request, so every request field the API supports works here too), file:// images
// are read, the engine answers, and the result becomes the input's output line. Every problem
// with the input becomes an error line; only cancellation gives no line.
#pragma once

#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/batch_inputs.h"
#include "qvl/engine.h"
#include "server/chat_request.h"

namespace qvl::cli {

struct BatchLine {
  nlohmann::json line;  // {"id", "file"?, "answer", "finish_reason", "usage", "timings"} or "error"
  std::string error;    // the error message, empty when answered
  int64_t prompt_tokens = 0, completion_tokens = 0;
};

class BatchItemRunner {
 public:
  // `defaults`: fields every body gets when it lacks them (sampling flags, response_format).
  BatchItemRunner(Engine& engine, nlohmann::json defaults, std::string base_dir, bool ignore_eos);

  // The request an item sends (defaults and model filled in), as the translator sees it.
  nlohmann::json request_body(const BatchItem& item) const;
  // Translates a body; throws server::ApiError for a bad one.
  server::ChatRequest translate(const nlohmann::json& body) const;

  // nullopt when `cancel` stopped the answer (the input is left for a later run).
  std::optional<BatchLine> run(const BatchItem& item, const std::atomic<bool>& cancel);

 private:
  // A file:// URL's file (relative to the requests file), refused above max_bytes before reading.
  std::vector<uint8_t> read_file_image(const std::string& url, size_t max_bytes = 0,
                                       const char* what = "image") const;

  Engine& engine_;
  nlohmann::json defaults_;
  std::string base_dir_;
  bool ignore_eos_;
  server::RequestLimits limits_;
};

}  // namespace qvl::cli
