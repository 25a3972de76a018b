// POST /v1/media/preview (server/media_preview.h): the server's gates around the preview.
#include "server/api_error.h"
#include "server/connection_watch.h"
#include "server/media_preview.h"
#include "server/server.h"
#include "server/video_part.h"

namespace qvl::server {

using Clock = std::chrono::steady_clock;

void Server::handle_media_preview(const HttpRequest& req, HttpResponse& res) {
  Engine* engine = ready_engine_or_503(res);
  if (!engine) return;
  nlohmann::json preview;
  try {
    MediaPreviewRequest request = parse_media_preview(req.body, engine->info(), options_.limits);
    fetch_remote_videos(request.chat, options_.remote, options_.limits);
    // Decoding a video or rendering a document is a request's work: it waits for a generation
    // slot as its chat request would (and a document then for the render gate).
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(options_.request_timeout_seconds));
    Admission::Slot slot;
    const auto outcome = admission_.enter(slot, [&] {
      return !peer_disconnected(req.socket_fd) && !abandon_queue_.load() && Clock::now() < deadline;
    });
    if (outcome == Admission::Outcome::kQueueFull) {
      res.set_header("Retry-After", "1");
      throw ApiError(429, "rate_limit_error",
                     "the server is busy: every generation slot is in use and the queue is full; "
                     "retry after a second",
                     "", "rate_limit_exceeded");
    }
    if (outcome == Admission::Outcome::kGaveUp) {
      throw ApiError(503, "server_error", "gave up waiting for a free slot; retry the request", "",
                     "preview_cancelled");
    }
    preview = request.video ? preview_video(*engine, request.chat, options_.limits)
                            : preview_document(request.chat, options_.limits);
  } catch (const ApiError& error) {
    return send_error(res, error);
  }
  res.status = 200;
  res.set_content(preview.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

}  // namespace qvl::server
