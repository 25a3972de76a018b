#include "server/http_stream.h"

#include <microhttpd.h>

#include <cstring>

namespace qvl::server {

StreamChannel::StreamChannel(MHD_Connection* connection, std::chrono::milliseconds write_timeout)
    : connection_(connection), write_timeout_(write_timeout) {}

void StreamChannel::resume_locked() {
  // Only a connection we suspended is resumed: libmicrohttpd never closes a suspended
  // connection, so connection_ is still valid here.
  if (!reader_suspended_) return;
  reader_suspended_ = false;
  MHD_resume_connection(connection_);
}

bool StreamChannel::write(std::string_view data) {
  std::unique_lock lock(mutex_);
  if (!drained_.wait_for(lock, write_timeout_,
                         [&] { return closed_ || pending_.size() - sent_ < kMaxPending; })) {
    closed_ = true;  // the client stopped reading
  }
  if (closed_) {
    resume_locked();  // lets the reader end the response
    return false;
  }
  if (sent_ > 0 && sent_ == pending_.size()) {
    pending_.clear();
    sent_ = 0;
  }
  pending_.append(data);
  resume_locked();
  return true;
}

void StreamChannel::finish() {
  std::lock_guard lock(mutex_);
  finished_ = true;
  resume_locked();
}

ssize_t StreamChannel::read(char* buffer, size_t max) {
  std::lock_guard lock(mutex_);
  if (closed_) return MHD_CONTENT_READER_END_WITH_ERROR;
  if (sent_ < pending_.size()) {
    const size_t n = std::min(max, pending_.size() - sent_);
    std::memcpy(buffer, pending_.data() + sent_, n);
    sent_ += n;
    if (sent_ == pending_.size()) {
      pending_.clear();
      sent_ = 0;
    }
    drained_.notify_all();
    return static_cast<ssize_t>(n);
  }
  if (finished_) return MHD_CONTENT_READER_END_OF_STREAM;
  // Nothing to send yet: park the connection instead of being polled in a busy loop.
  reader_suspended_ = true;
  MHD_suspend_connection(connection_);
  return 0;
}

void StreamChannel::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  reader_suspended_ = false;  // the connection is being freed: never resume it
  drained_.notify_all();
}

void StreamChannel::force_close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  resume_locked();
  drained_.notify_all();
}

}  // namespace qvl::server
