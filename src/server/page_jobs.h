// The pages of a per-page document request ("document_mode": "per_page"), each its own
// generation: a GenerationJob per page, as many running at once as the request holds generation
// slots. The request comes in with one slot (admitted like any other); poll() takes more while
// pages wait and a slot is free with nobody queued (Admission::try_enter, so it never jumps the
// queue), hands a finished page's slot to the next page, and frees the slots no page needs any
// more. The engine batches the running pages together (continuous batching).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "qvl/engine.h"
#include "server/admission.h"
#include "server/connection_watch.h"
#include "server/generation_job.h"
#include "server/per_page_request.h"

namespace qvl::server {

class PageJobs {
 public:
  // `engine` and `admission` must outlive this.
  PageJobs(Engine& engine, Admission& admission, std::vector<PageRequest> pages,
           Admission::Slot first);
  PageJobs(const PageJobs&) = delete;
  PageJobs& operator=(const PageJobs&) = delete;

  // Watched for the client leaving and the deadline; a cancel reaches every running page and
  // keeps the waiting ones from starting.
  CancelState& cancel_state() { return cancel_; }

  size_t size() const { return pages_.size(); }
  int page_number(size_t index) const { return pages_[index].number; }

  struct Event {
    size_t index;  // the page's position in the request
    GenerationJob::Progress progress;
  };
  // Starts waiting pages on free slots and takes what the running pages produced, waiting up to
  // `timeout` when none produced anything. A page's end is reported once (progress.finished).
  std::vector<Event> poll(std::chrono::milliseconds timeout);
  // Every page ended, or the request was cancelled and no page is running.
  bool finished() const;
  // Usage over the pages that ended without an error: token counts and times summed (times are
  // per page, so they add up to more than the wall time when pages ran together); ttft_ms is the
  // first page's.
  GenerationStats total_stats();
  // The page's job once it started; null for a page the request's cancel kept from starting.
  GenerationJob* job(size_t index) { return jobs_[index].get(); }

 private:
  void start_waiting_pages();

  Engine& engine_;
  Admission& admission_;
  std::vector<PageRequest> pages_;  // generation moved out when the page starts
  std::vector<std::unique_ptr<GenerationJob>> jobs_;
  std::vector<Admission::Slot> slots_;  // the slot each running page holds
  std::vector<bool> ended_;             // end reported by poll
  std::vector<Admission::Slot> spare_;  // held, not yet given to a page
  size_t next_ = 0;                     // first page not started
  size_t running_ = 0;
  CancelState cancel_;
};

}  // namespace qvl::server
