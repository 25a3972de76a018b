#include "server/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "server/http_stream.h"

namespace qvl::server {
namespace {

using Clock = std::chrono::steady_clock;
// A refused body is read and dropped up to this much (and kLingerSeconds) before closing: a
// client still sending when the connection closes gets a reset, and its TCP stack may drop the
// refusal before the client reads it. Dropping bytes costs no memory.
constexpr uint64_t kLingerBytes = 64u << 20;

std::string address_text(const sockaddr* address) {
  char buffer[INET6_ADDRSTRLEN] = {};
  if (!address) return "";
  if (address->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, buffer,
              sizeof(buffer));
  } else if (address->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, buffer,
              sizeof(buffer));
  }
  return buffer;
}

enum class Step { kBody, kWorking, kReady, kSent };

}  // namespace

// One request on a connection, from its head to its response.
struct Exchange {
  ConnectionState* connection = nullptr;
  MHD_Connection* mhd = nullptr;
  HttpRequest request;
  HttpResponse response;
  Step step = Step::kBody;
  bool blocking = false;
  bool close_after = false;
  bool expects_continue = false;  // the client waits for 100 Continue before its body
  bool discarding = false;        // refused while its body may be arriving: drop the rest
  uint64_t discarded = 0;
  std::shared_ptr<StreamChannel> channel;
};

struct HttpServer::Impl {
  Impl(HttpServerOptions options_in, HttpApp app_in)
      : options(std::move(options_in)),
        app(std::move(app_in)),
        table(
            options.connections,
            [this](const std::string& path, int status) { app.done(path, status); },
            app.error_body) {}

  HttpServerOptions options;
  HttpApp app;
  ConnectionTable table;
  MHD_Daemon* daemon = nullptr;
  int listen_fd = -1;
  std::mutex mutex;  // guards the fields below and every Exchange::step
  std::condition_variable workers_done;
  int workers = 0;
  std::vector<std::weak_ptr<StreamChannel>> channels;
  bool stopped = false;

  MHD_Result on_access(MHD_Connection* mhd, const char* url, const char* method,
                       const char* version, const char* upload, size_t* upload_size,
                       void** request_slot);
  MHD_Result begin(MHD_Connection* mhd, const char* url, const char* method, const char* version,
                   void** request_slot);
  MHD_Result respond(Exchange& exchange);
  MHD_Result refuse_now(Exchange& exchange, HttpResponse response);
  MHD_Result refuse_lingering(Exchange& exchange, const HttpResponse& response);
  void run_worker(std::shared_ptr<Exchange> exchange);
  void finish_request(void** request_slot);
};

namespace {

MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, size_t key_size,
                          const char* value, size_t value_size) {
  auto* headers = static_cast<HttpHeaders*>(cls);
  headers->emplace_back(std::string(key, key_size),
                        value ? std::string(value, value_size) : std::string());
  return MHD_YES;
}

ssize_t read_stream(void* cls, uint64_t, char* buffer, size_t max) {
  return (*static_cast<std::shared_ptr<StreamChannel>*>(cls))->read(buffer, max);
}

void free_stream(void* cls) {
  auto* holder = static_cast<std::shared_ptr<StreamChannel>*>(cls);
  (*holder)->close();
  delete holder;
}

HttpResponse error_response(const HttpApp& app, int status, const std::string& message,
                            const std::string& code) {
  HttpResponse response;
  response.status = status;
  response.set_content(app.error_body(status, message, code), "application/json");
  return response;
}

}  // namespace

MHD_Result HttpServer::Impl::begin(MHD_Connection* mhd, const char* url, const char* method,
                                   const char* version, void** request_slot) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  auto* connection = info ? static_cast<ConnectionState*>(info->socket_context) : nullptr;
  if (!connection) return MHD_NO;
  auto exchange = std::make_shared<Exchange>();
  *request_slot = new std::shared_ptr<Exchange>(exchange);
  exchange->connection = connection;
  exchange->mhd = mhd;
  HttpRequest& request = exchange->request;
  request.method = method;
  request.path = url;
  request.version = version;
  request.remote_addr = connection->ip;
  request.socket_fd = connection->fd;
  MHD_get_connection_values_n(mhd, MHD_HEADER_KIND, &collect_header, &request.headers);

  const GateVerdict verdict = check_request_head(request, options.limits);
  if (verdict.status != 0) {
    exchange->close_after = true;
    HttpResponse refusal = error_response(app, verdict.status, verdict.message, verdict.code);
    // A body too large or in an unaccepted coding is still framed unambiguously: it is read and
    // dropped for a moment (lingering) so a client still sending it reads the answer instead of
    // a reset (EPIPE). Ambiguous framing is never read: that connection closes at once.
    if (verdict.status == 413 || verdict.status == 415 || verdict.status == 417) {
      exchange->expects_continue = request.has_header("Expect");
      return refuse_lingering(*exchange, refusal);
    }
    return refuse_now(*exchange, std::move(refusal));
  }
  const bool has_body = verdict.chunked || verdict.content_length.value_or(0) > 0;
  // A refusal before the body is read leaves it unread: the connection cannot be reused.
  exchange->close_after = has_body;
  exchange->expects_continue = request.has_header("Expect");
  if (auto early = app.on_head(request)) {
    return has_body ? refuse_lingering(*exchange, *early)
                    : refuse_now(*exchange, std::move(*early));
  }
  exchange->blocking = app.blocking(request);
  if (exchange->blocking) {
    std::lock_guard lock(mutex);
    if (workers >= options.max_workers) {
      HttpResponse busy = error_response(app, 503,
                                         "the server is busy: " + std::to_string(workers) +
                                             " requests are being handled; retry shortly",
                                         "server_busy");
      busy.set_header("Retry-After", "1");
      return refuse_now(*exchange, std::move(busy));
    }
  }
  exchange->close_after = false;
  if (!table.enter(connection,
                   has_body ? ConnectionPhase::kReadingBody : ConnectionPhase::kHandling,
                   request.path)) {
    return MHD_NO;
  }
  return MHD_YES;  // libmicrohttpd now sends 100 Continue if asked, and reads the body
}

MHD_Result HttpServer::Impl::refuse_now(Exchange& exchange, HttpResponse response) {
  table.enter(exchange.connection, ConnectionPhase::kHandling, exchange.request.path);
  exchange.response = std::move(response);
  return respond(exchange);
}

MHD_Result HttpServer::Impl::refuse_lingering(Exchange& exchange, const HttpResponse& response) {
  // A client waiting for 100 Continue sends nothing more: a plain response and close is clean.
  if (exchange.expects_continue) return refuse_now(exchange, response);
  std::string headers;
  for (const auto& [name, value] : response.headers) {
    if (ascii_iequals(name, "Content-Type") || ascii_iequals(name, "Content-Length") ||
        ascii_iequals(name, "Connection")) {
      continue;
    }
    headers += name + ": " + value + "\r\n";
  }
  table.refuse_lingering(exchange.connection, response.status, response.body, headers);
  exchange.discarding = true;
  return MHD_YES;
}

MHD_Result HttpServer::Impl::on_access(MHD_Connection* mhd, const char* url, const char* method,
                                       const char* version, const char* upload, size_t* upload_size,
                                       void** request_slot) {
  if (!*request_slot) return begin(mhd, url, method, version, request_slot);
  const std::shared_ptr<Exchange> exchange =
      *static_cast<std::shared_ptr<Exchange>*>(*request_slot);
  std::unique_lock lock(mutex);
  const Step step = exchange->step;
  lock.unlock();
  if (step == Step::kReady) return respond(*exchange);
  if (step != Step::kBody) return MHD_YES;
  if (exchange->discarding) {
    // Closing once the body is in (or too much of it came) ends the connection cleanly.
    exchange->discarded += *upload_size;
    const bool more = *upload_size > 0 && exchange->discarded < kLingerBytes;
    *upload_size = 0;
    return more ? MHD_YES : MHD_NO;
  }
  if (*upload_size > 0) {
    HttpRequest& request = exchange->request;
    if (request.body.size() + *upload_size > options.limits.max_body_bytes) {
      // Only a chunked body gets here (a declared length was checked). libmicrohttpd cannot
      // queue a response in the middle of a body, so the refusal goes straight to the socket.
      exchange->expects_continue = false;  // the body is coming already
      refuse_lingering(*exchange, error_response(app, 413,
                                                 "request body is larger than the " +
                                                     std::to_string(options.limits.max_body_bytes) +
                                                     "-byte limit (--max-body-mb); send smaller or "
                                                     "fewer images",
                                                 "request_too_large"));
      *upload_size = 0;
      return MHD_YES;
    }
    request.body.append(upload, *upload_size);
    table.add_body_bytes(exchange->connection, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  // The whole body is in.
  if (!table.enter(exchange->connection, ConnectionPhase::kHandling)) return MHD_NO;
  if (!exchange->blocking) {
    try {
      app.handle(exchange->request, exchange->response);
    } catch (const std::exception& error) {
      exchange->response = error_response(app, 500, std::string("internal error: ") + error.what(),
                                          "internal_error");
    }
    return respond(*exchange);
  }
  lock.lock();
  exchange->step = Step::kWorking;
  ++workers;
  lock.unlock();
  MHD_suspend_connection(mhd);
  std::thread([this, exchange] { run_worker(exchange); }).detach();
  return MHD_YES;
}

void HttpServer::Impl::run_worker(std::shared_ptr<Exchange> exchange) {
  try {
    app.handle(exchange->request, exchange->response);
  } catch (const std::exception& error) {
    exchange->response =
        error_response(app, 500, std::string("internal error: ") + error.what(), "internal_error");
  }
  std::shared_ptr<StreamChannel> channel;
  if (exchange->response.stream) {
    channel = std::make_shared<StreamChannel>(
        exchange->mhd,
        std::chrono::milliseconds(static_cast<int64_t>(options.write_timeout_seconds * 1000)));
  }
  {
    std::lock_guard lock(mutex);
    exchange->channel = channel;
    exchange->step = Step::kReady;
    if (channel) {
      std::erase_if(channels, [](const auto& weak) { return weak.expired(); });
      channels.push_back(channel);
      if (stopped) channel->force_close();  // stop() already cut the others
    }
  }
  MHD_resume_connection(exchange->mhd);  // the event thread calls on_access again: respond()
  if (channel) {
    int status = 499;
    try {
      status = exchange->response.stream(*channel);
    } catch (const std::exception& error) {
      QVL_LOG(kError) << "stream failed: " << error.what();
    }
    channel->finish();
    app.done(exchange->request.path, status);
  }
  std::lock_guard lock(mutex);
  --workers;
  workers_done.notify_all();
}

MHD_Result HttpServer::Impl::respond(Exchange& exchange) {
  HttpResponse& response = exchange.response;
  MHD_Response* reply = nullptr;
  if (response.stream) {
    std::shared_ptr<StreamChannel> channel;
    {
      std::lock_guard lock(mutex);
      channel = exchange.channel;
      exchange.step = Step::kSent;
    }
    if (!channel) return MHD_NO;
    reply = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, &read_stream,
                                              new std::shared_ptr<StreamChannel>(channel),
                                              &free_stream);
  } else {
    {
      std::lock_guard lock(mutex);
      exchange.step = Step::kSent;
    }
    if (response.has_static_body) {
      reply = MHD_create_response_from_buffer(response.static_body.size(),
                                              const_cast<char*>(response.static_body.data()),
                                              MHD_RESPMEM_PERSISTENT);
    } else {
      reply = MHD_create_response_from_buffer(response.body.size(), response.body.data(),
                                              MHD_RESPMEM_MUST_COPY);
    }
  }
  if (!reply) return MHD_NO;
  for (const auto& [name, value] : response.headers) {
    MHD_add_response_header(reply, name.c_str(), value.c_str());
  }
  if (exchange.close_after || (app.draining && app.draining())) {
    MHD_add_response_header(reply, MHD_HTTP_HEADER_CONNECTION, "close");
  }
  const MHD_Result queued =
      MHD_queue_response(exchange.mhd, static_cast<unsigned>(response.status), reply);
  MHD_destroy_response(reply);
  if (!response.stream) app.done(exchange.request.path, response.status);
  return queued;
}

void HttpServer::Impl::finish_request(void** request_slot) {
  auto* holder = static_cast<std::shared_ptr<Exchange>*>(*request_slot);
  if (!holder) return;
  ConnectionState* connection = (*holder)->connection;
  delete holder;
  *request_slot = nullptr;
  if (connection) table.enter(connection, ConnectionPhase::kAwaitingHeaders);
}

namespace {

MHD_Result on_access(void* cls, MHD_Connection* connection, const char* url, const char* method,
                     const char* version, const char* upload, size_t* upload_size,
                     void** request_slot) {
  return static_cast<HttpServer::Impl*>(cls)->on_access(connection, url, method, version, upload,
                                                        upload_size, request_slot);
}

void on_completed(void* cls, MHD_Connection*, void** request_slot, MHD_RequestTerminationCode) {
  static_cast<HttpServer::Impl*>(cls)->finish_request(request_slot);
}

void on_connection(void* cls, MHD_Connection* connection, void** socket_context,
                   MHD_ConnectionNotificationCode code) {
  auto* impl = static_cast<HttpServer::Impl*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* fd_info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    const MHD_ConnectionInfo* address_info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    *socket_context =
        impl->table.add(fd_info ? fd_info->connect_fd : -1,
                        address_text(address_info ? address_info->client_addr : nullptr));
  } else {
    impl->table.remove(static_cast<ConnectionState*>(*socket_context));
    *socket_context = nullptr;
  }
}

void log_from_library(void*, const char* format, va_list arguments) {
  char line[512];
  std::vsnprintf(line, sizeof(line), format, arguments);
  QVL_LOG(kDebug) << "http: " << line;
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, HttpApp app)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(app))) {}

HttpServer::~HttpServer() {
  stop(std::chrono::milliseconds(0));
}

void HttpServer::start(ListeningSocket socket) {
  Impl& impl = *impl_;
  impl.listen_fd = socket.fd;
  const HttpServerOptions& options = impl.options;
  const double longest_wait =
      std::max({options.connections.header_timeout_seconds, options.connections.body_stall_seconds,
                options.write_timeout_seconds});
  // The library's own idle timeout only backs up ours (ConnectionTable answers first).
  const auto idle_timeout = static_cast<unsigned>(longest_wait + 2.5);
  const auto hard_cap = static_cast<unsigned>(
      options.connections.max_connections > 0 ? options.connections.max_connections + 64 : 0);
  // Headers live in the connection's memory pool: this bounds them in the library too.
  const size_t pool = options.limits.max_header_bytes + (32u << 10);
  impl.daemon = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, nullptr,
      nullptr, &on_access, &impl, MHD_OPTION_LISTEN_SOCKET, socket.fd, MHD_OPTION_NOTIFY_COMPLETED,
      &on_completed, &impl, MHD_OPTION_NOTIFY_CONNECTION, &on_connection, &impl,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool, MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout,
      MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_EXTERNAL_LOGGER, &log_from_library, nullptr,
      hard_cap ? MHD_OPTION_CONNECTION_LIMIT : MHD_OPTION_END, hard_cap, MHD_OPTION_END);
  if (!impl.daemon) {
    close(socket.fd);
    impl.listen_fd = -1;
    fail(ErrorCode::kIo, "cannot start the HTTP server (libmicrohttpd)");
  }
}

void HttpServer::stop_accepting() {
  Impl& impl = *impl_;
  if (impl.daemon && impl.listen_fd >= 0) {
    const MHD_socket fd = MHD_quiesce_daemon(impl.daemon);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    impl.listen_fd = -1;
  }
  impl.table.drain();
}

void HttpServer::stop(std::chrono::milliseconds linger) {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.mutex);
    if (impl.stopped) return;
    impl.stopped = true;
  }
  if (!impl.daemon) {
    if (impl.listen_fd >= 0) close(impl.listen_fd);
    return;
  }
  stop_accepting();
  const auto end = Clock::now() + linger;
  while (impl.table.size() > 0 && Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  impl.table.close_all();
  std::unique_lock lock(impl.mutex);
  for (const auto& weak : impl.channels) {
    if (auto channel = weak.lock()) channel->force_close();
  }
  impl.channels.clear();
  // Handlers end soon once the engine work is cancelled (the caller did that); each resumes
  // its connection, which libmicrohttpd needs before it stops.
  impl.workers_done.wait(lock, [&] { return impl.workers == 0; });
  lock.unlock();
  MHD_stop_daemon(impl.daemon);
  impl.daemon = nullptr;
}

size_t HttpServer::open_connections() {
  return impl_->table.size();
}

}  // namespace qvl::server
