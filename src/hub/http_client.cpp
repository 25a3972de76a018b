#include "hub/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>
#include <mutex>

#include "base/error.h"

namespace qvl::hub {
namespace {

struct Transfer {
  const HttpRequest* request = nullptr;
  HttpResponse* response = nullptr;
  CURL* curl = nullptr;
  bool body_too_large = false;
  std::exception_ptr sink_error;
};

std::string trim(const std::string& text) {
  size_t start = 0, end = text.size();
  while (start < end && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  while (end > start && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(start, end - start);
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response in a redirect chain: only the last one's headers matter.
    transfer->response->headers.clear();
    transfer->response->body.clear();
  } else if (const size_t colon = line.find(':'); colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    transfer->response->headers[trim(name)] = trim(line.substr(colon + 1));
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  long status = 0;
  curl_easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &status);
  if (transfer->request->sink && status >= 200 && status < 300) {
    try {
      return transfer->request->sink(status, data, bytes) ? bytes : 0;
    } catch (...) {
      transfer->sink_error = std::current_exception();
      return 0;
    }
  }
  std::string& body = transfer->response->body;
  if (body.size() + bytes > transfer->request->max_body) {
    transfer->body_too_large = true;
    return 0;
  }
  body.append(data, bytes);
  return bytes;
}

TransportFailure classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return TransportFailure::kNone;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
      return TransportFailure::kCannotConnect;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return TransportFailure::kInterrupted;
    case CURLE_WRITE_ERROR:
      return TransportFailure::kSinkFailed;
    default:
      return TransportFailure::kOther;
  }
}

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

HttpResponse http_request(const HttpRequest& request) {
  init_curl_once();
  HttpResponse response;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) fail(ErrorCode::kInternal, "curl_easy_init failed");
  Transfer transfer{&request, &response, curl.get(), false, nullptr};
  CURL* handle = curl.get();

  curl_slist* raw_headers = nullptr;
  if (!request.bearer_token.empty()) {
    raw_headers =
        curl_slist_append(raw_headers, ("Authorization: Bearer " + request.bearer_token).c_str());
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(raw_headers,
                                                                      curl_slist_free_all);
  char error_text[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(handle, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_USERAGENT, "qvl/0.1");
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(handle, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(handle, CURLOPT_BUFFERSIZE, 256L * 1024);  // fewer, larger writes
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT, request.connect_timeout_seconds);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, request.stall_timeout_seconds);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
  if (headers) curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
  if (request.method == "HEAD") curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
  const std::string range = std::to_string(request.range_start) + "-";
  if (request.range_start >= 0) curl_easy_setopt(handle, CURLOPT_RANGE, range.c_str());

  const CURLcode code = curl_easy_perform(handle);
  if (transfer.sink_error) std::rethrow_exception(transfer.sink_error);
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response.status);
  char* effective_url = nullptr;
  curl_easy_getinfo(handle, CURLINFO_EFFECTIVE_URL, &effective_url);
  if (effective_url) response.effective_url = effective_url;
  response.failure = classify(code);
  if (transfer.body_too_large) {
    response.failure = TransportFailure::kOther;
    response.error = "response body larger than " + std::to_string(request.max_body) + " bytes";
  } else if (code != CURLE_OK) {
    response.error = error_text[0] ? error_text : curl_easy_strerror(code);
  }
  return response;
}

}  // namespace qvl::hub
