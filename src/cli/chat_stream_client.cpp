#include "cli/chat_stream_client.h"

#include <curl/curl.h>

#include <cctype>
#include <memory>
#include <mutex>

#include "base/error.h"
#include "cli/sse_stream.h"
#include "cli/stream_chunk.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

struct Transfer {
  CURL* curl = nullptr;
  std::string retry_after;
  std::string error_body;  // body of a non-2xx response
  std::function<void(std::string_view)> on_success_bytes;
};

long status_of(CURL* curl) {
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size()) {
    bool match = true;
    for (size_t i = 0; i < kRetryAfter.size() && match; ++i) {
      match = std::tolower(static_cast<unsigned char>(line[i])) == kRetryAfter[i];
    }
    if (match) {
      std::string value(line.substr(kRetryAfter.size()));
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
        value.pop_back();
      }
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) {
        value.erase(value.begin());
      }
      transfer->retry_after = value;
    }
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  const long status = status_of(transfer->curl);
  if (status >= 200 && status < 300 && transfer->on_success_bytes) {
    transfer->on_success_bytes(std::string_view(data, bytes));
  } else if (transfer->error_body.size() < (size_t{1} << 20)) {
    transfer->error_body.append(data, bytes);
  }
  return bytes;
}

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

using CurlHandle = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using HeaderList = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

// A handle with the options every request shares; curl keeps pointers to url and transfer.
CurlHandle new_handle(const std::string& url, Transfer& transfer, double timeout_seconds,
                      char* error_text) {
  init_curl_once();
  CurlHandle curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) fail(ErrorCode::kInternal, "curl_easy_init failed");
  CURL* h = curl.get();
  transfer.curl = h;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "qvl-loadtest/0.1");
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 15L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_seconds * 1000));
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  return curl;
}

HeaderList auth_headers(const std::string& api_key) {
  curl_slist* list = nullptr;
  if (!api_key.empty())
    list = curl_slist_append(list, ("Authorization: Bearer " + api_key).c_str());
  return HeaderList(list, curl_slist_free_all);
}

}  // namespace

ChatStreamClient::ChatStreamClient(std::string base_url, std::string api_key,
                                   double request_timeout_seconds)
    : base_url_(std::move(base_url)),
      api_key_(std::move(api_key)),
      request_timeout_seconds_(request_timeout_seconds),
      epoch_(std::chrono::steady_clock::now()) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
}

double ChatStreamClient::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

HttpReply ChatStreamClient::get(const std::string& path) const {
  HttpReply reply;
  Transfer transfer;
  transfer.on_success_bytes = [&](std::string_view bytes) { reply.body.append(bytes); };
  char error_text[CURL_ERROR_SIZE] = {0};
  const std::string url = base_url_ + path;
  CurlHandle curl = new_handle(url, transfer, 60, error_text);
  HeaderList headers = auth_headers(api_key_);
  if (headers) curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  const CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) {
    reply.error = error_text[0] ? error_text : curl_easy_strerror(code);
    return reply;
  }
  reply.status = status_of(curl.get());
  reply.retry_after = transfer.retry_after;
  if (reply.status < 200 || reply.status >= 300) reply.body = transfer.error_body;
  return reply;
}

ChatStreamResult ChatStreamClient::stream_chat(
    json body, const std::function<void()>& on_first_content) const {
  body["stream"] = true;
  const std::string payload = body.dump();
  ChatStreamResult result;
  SseParser parser;
  bool finished_stream = false;  // saw [DONE]
  bool saw_event = false;
  std::string first_bytes;  // for the message when the body is not an event stream
  auto on_event = [&](const std::string& data) {
    saw_event = true;
    if (data == "[DONE]") {
      finished_stream = true;
      return;
    }
    if (read_stream_event(data, now(), result) && on_first_content) on_first_content();
  };

  Transfer transfer;
  transfer.on_success_bytes = [&](std::string_view bytes) {
    if (first_bytes.size() < 200) first_bytes.append(bytes.substr(0, 200));
    parser.feed(bytes, on_event);
  };
  char error_text[CURL_ERROR_SIZE] = {0};
  const std::string url = base_url_ + "/v1/chat/completions";
  CurlHandle curl = new_handle(url, transfer, request_timeout_seconds_, error_text);
  HeaderList headers = auth_headers(api_key_);
  curl_slist* list = headers.release();
  list = curl_slist_append(list, "Content-Type: application/json");
  list = curl_slist_append(list, "Accept: text/event-stream");
  // Without this curl waits up to a second for "100 Continue" on large bodies (images), which
  // would be counted as time to first token.
  list = curl_slist_append(list, "Expect:");
  headers.reset(list);
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));

  result.sent_at = now();
  const CURLcode code = curl_easy_perform(h);
  result.done_at = now();
  result.status = status_of(h);
  result.retry_after = transfer.retry_after;
  if (code != CURLE_OK) {
    result.error = error_text[0] ? error_text : curl_easy_strerror(code);
  } else if (result.status < 200 || result.status >= 300) {
    result.error = error_message(transfer.error_body);
  } else if (result.error.empty() && !saw_event) {
    result.error = "the server answered a streaming request without an event stream: " +
                   first_bytes.substr(0, 200);
  } else if (result.error.empty() && !finished_stream) {
    result.error = "the stream ended without data: [DONE]";
  }
  return result;
}

}  // namespace qvl::cli
