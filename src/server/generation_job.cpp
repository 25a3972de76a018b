#include "server/generation_job.h"

#include <utility>

namespace qvl::server {

GenerationJob::GenerationJob(Engine& engine, GenerationRequest request,
                             std::function<void()> on_end)
    : on_end_(std::move(on_end)), start_(std::chrono::steady_clock::now()) {
  thread_ = std::thread(
      [this, &engine, request = std::move(request)]() mutable { run(engine, std::move(request)); });
}

GenerationJob::~GenerationJob() {
  cancel_.request(CancelReason::kClientGone);
  thread_.join();
}

void GenerationJob::run(Engine& engine, GenerationRequest request) {
  // With log-probabilities, a token's last callback is on_logprobs (after its text, if any): the
  // reader is woken there, so it takes a token's text and log-probability together, and a token
  // without text leaves as soon as it is generated instead of with the next text.
  const bool wake_on_logprobs = request.top_logprobs >= 0;
  auto on_text = [this, wake_on_logprobs](const std::string& delta) {
    std::lock_guard lock(mutex_);
    if (!has_text_) {
      first_text_seconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }
    has_text_ = true;
    pending_ += delta;
    if (!wake_on_logprobs) {
      ready_ = true;
      changed_.notify_all();
    }
    return !cancel_.cancel.load();
  };
  if (wake_on_logprobs) {
    request.on_logprobs = [this](const GeneratedTokenLogprobs& token) {
      std::lock_guard lock(mutex_);
      pending_logprobs_.push_back(token);
      ready_ = true;
      changed_.notify_all();
    };
  }
  GenerationResult result;
  std::exception_ptr error;
  try {
    result = engine.generate(request, on_text, &cancel_.cancel);
  } catch (...) {
    error = std::current_exception();
  }
  if (on_end_) on_end_();
  std::lock_guard lock(mutex_);
  if (!has_text_) {
    first_text_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  result_ = std::move(result);
  error_ = error;
  finished_ = true;
  changed_.notify_all();
}

GenerationJob::Progress GenerationJob::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [this] { return ready_ || finished_; });
  ready_ = false;
  Progress progress;
  progress.text = std::move(pending_);
  pending_.clear();
  progress.logprobs = std::move(pending_logprobs_);
  pending_logprobs_.clear();
  // With text still to send, the end is reported by the next call.
  progress.finished = finished_ && progress.text.empty() && progress.logprobs.empty();
  return progress;
}

void GenerationJob::wait_started() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return has_text_ || finished_; });
}

void GenerationJob::wait_finished() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return finished_; });
}

bool GenerationJob::finished() {
  std::lock_guard lock(mutex_);
  return finished_;
}

}  // namespace qvl::server
