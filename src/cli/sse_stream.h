// Incremental parser for a text/event-stream body (the SSE wire format of OpenAI streaming):
// network chunks end anywhere, so bytes are buffered until a line, then an event, is complete.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace qvl::cli {

class SseParser {
 public:
  using EventHandler = std::function<void(const std::string& data)>;

  // Consumes bytes; calls on_event with the joined data lines of each event completed by them.
  // Comments (":...") and fields other than data are skipped; events without data are dropped.
  void feed(std::string_view bytes, const EventHandler& on_event);

  // Ends the stream: an event not yet closed by a blank line is discarded, as the spec says.
  void finish();

 private:
  void take_line(std::string_view line, const EventHandler& on_event);

  std::string line_;  // the incomplete line so far
  std::string data_;  // data lines of the current event, joined by '\n'
  bool has_data_ = false;
  bool after_cr_ = false;  // the previous byte was '\r': a following '\n' belongs to it
};

}  // namespace qvl::cli
