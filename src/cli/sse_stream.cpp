#include "cli/sse_stream.h"

namespace qvl::cli {

void SseParser::feed(std::string_view bytes, const EventHandler& on_event) {
  for (const char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // "\r\n" ends one line, not two
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      take_line(line_, on_event);
      line_.clear();
    } else {
      line_ += c;
    }
  }
}

void SseParser::finish() {
  line_.clear();
  data_.clear();
  has_data_ = false;
  after_cr_ = false;
}

void SseParser::take_line(std::string_view line, const EventHandler& on_event) {
  if (line.empty()) {  // a blank line dispatches the event
    if (has_data_) on_event(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive)
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return;
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

}  // namespace qvl::cli
