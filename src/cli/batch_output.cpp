#include "cli/batch_output.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace qvl::cli {

ResumeState resume_output(const std::string& path) {
  ResumeState state;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return state;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kIo, "cannot read output file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  in.close();
  const size_t complete = content.rfind('\n') == std::string::npos ? 0 : content.rfind('\n') + 1;
  if (complete < content.size()) {
    std::filesystem::resize_file(path, complete, error);
    if (error) fail(ErrorCode::kIo, "cannot cut the partial last line of '" + path + "'");
    state.cut_partial_line = true;
  }
  std::istringstream lines(content.substr(0, complete));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const nlohmann::json value = nlohmann::json::parse(line, nullptr, false);
    if (value.is_object() && value.contains("id") && value["id"].is_string()) {
      state.done_ids.insert(value["id"].get<std::string>());
    } else {
      ++state.unreadable_lines;
    }
  }
  return state;
}

JsonlWriter::JsonlWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "ab");
  if (file_ == nullptr) {
    fail(ErrorCode::kIo, "cannot open output file '" + path + "': " + std::strerror(errno));
  }
}

JsonlWriter::~JsonlWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void JsonlWriter::write(const nlohmann::json& line) {
  // Invalid UTF-8 cannot come from the engine, but a line is never lost to it.
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mutex_);
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    fail(ErrorCode::kIo, "cannot write to '" + path_ + "': " + std::strerror(errno));
  }
}

}  // namespace qvl::cli
