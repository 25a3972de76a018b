// One chat completion running on its own thread, so the HTTP thread can wait for the first token
// (errors such as a corrupt image still become a 4xx before any header is sent) and then stream
// what the engine produces.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "qvl/engine.h"
#include "server/connection_watch.h"

namespace qvl::server {

class GenerationJob {
 public:
  // Starts generating at once; `engine` must outlive the job. on_end (optional) runs on the
  // job's thread as soon as the engine returns, before the job reports its end: e.g. to free the
  // request's generation slot while the last events are still on their way to the client.
  GenerationJob(Engine& engine, GenerationRequest request, std::function<void()> on_end = {});
  // Cancels if still running and joins the thread.
  ~GenerationJob();
  GenerationJob(const GenerationJob&) = delete;
  GenerationJob& operator=(const GenerationJob&) = delete;

  CancelState& cancel_state() { return cancel_; }

  struct Progress {
    std::string text;  // new text since the last call (whole UTF-8 characters)
    // Log-probabilities of the tokens generated since the last call (if the request asked).
    std::vector<GeneratedTokenLogprobs> logprobs;
    bool finished = false;  // the engine returned or threw
  };
  // Waits up to `timeout` for new text, new log-probabilities or the end, and takes them.
  Progress wait(std::chrono::milliseconds timeout);
  // Waits until there is text or the job ended, without taking anything.
  void wait_started();
  void wait_finished();
  bool finished();

  // Valid once finished: the result, or the exception the engine threw.
  const GenerationResult& result() const { return result_; }
  std::exception_ptr error() const { return error_; }
  // Seconds from the job's start to its first text (or to its end if no text came).
  double seconds_to_first_text() const { return first_text_seconds_; }

 private:
  void run(Engine& engine, GenerationRequest request);

  CancelState cancel_;
  std::function<void()> on_end_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_;
  std::vector<GeneratedTokenLogprobs> pending_logprobs_;
  // A token is complete (with log-probabilities: its last callback came), so a reader takes its
  // text and log-probability together.
  bool ready_ = false;
  bool has_text_ = false;
  bool finished_ = false;
  GenerationResult result_;
  std::exception_ptr error_;
  std::chrono::steady_clock::time_point start_;
  double first_text_seconds_ = 0;
  std::thread thread_;
};

}  // namespace qvl::server
