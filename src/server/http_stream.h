// A streamed response body between a worker thread (the writer) and libmicrohttpd's event
// thread (the reader). The reader never blocks: with nothing to send it suspends the
// connection, and the next write resumes it. The writer blocks only while more than a bounded
// amount is waiting for a slow client, and gives up after the write timeout.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "server/http_types.h"

struct MHD_Connection;

namespace qvl::server {

class StreamChannel : public StreamSink {
 public:
  StreamChannel(MHD_Connection* connection, std::chrono::milliseconds write_timeout);

  // Worker side.
  bool write(std::string_view data) override;
  void finish();  // the body is complete

  // Event-thread side: libmicrohttpd's content reader and its free callback.
  ssize_t read(char* buffer, size_t max);
  void close();

  // Shutdown: the client is dropped whatever state the stream is in.
  void force_close();

 private:
  void resume_locked();

  static constexpr size_t kMaxPending = 1u << 20;
  MHD_Connection* connection_;
  std::chrono::milliseconds write_timeout_;
  std::mutex mutex_;
  std::condition_variable drained_;
  std::string pending_;
  size_t sent_ = 0;  // bytes of pending_ already handed out
  bool finished_ = false;
  bool closed_ = false;            // the connection is gone (or must go)
  bool reader_suspended_ = false;  // we suspended the connection; the next event resumes it
};

}  // namespace qvl::server
