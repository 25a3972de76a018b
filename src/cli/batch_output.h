// The output of `qvl batch`: a JSONL file, one object per input, appended as answers finish (so
// an interrupted run keeps every finished line) and read back to resume.
#pragma once

#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>

namespace qvl::cli {

struct ResumeState {
  std::unordered_set<std::string> done_ids;  // ids of complete lines already in the file
  bool cut_partial_line = false;  // the file ended in half a line (a crash): it was removed
  int64_t unreadable_lines = 0;   // complete lines that are not JSON objects with an id
};

// Reads an existing output file (nothing if it does not exist). A last line without its newline
// is cut off the file, so appending continues on a line boundary. Throws qvl::Error on I/O errors.
ResumeState resume_output(const std::string& path);

// Appends lines; each is written whole and flushed. Thread-safe.
class JsonlWriter {
 public:
  explicit JsonlWriter(const std::string& path);  // throws qvl::Error when it cannot open
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;

  void write(const nlohmann::json& line);

 private:
  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace qvl::cli
