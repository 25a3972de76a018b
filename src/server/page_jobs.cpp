#include "server/page_jobs.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace qvl::server {

PageJobs::PageJobs(Engine& engine, Admission& admission, std::vector<PageRequest> pages,
                   Admission::Slot first)
    : engine_(engine),
      admission_(admission),
      pages_(std::move(pages)),
      jobs_(pages_.size()),
      slots_(pages_.size()),
      ended_(pages_.size(), false) {
  spare_.push_back(std::move(first));
  start_waiting_pages();
}

void PageJobs::start_waiting_pages() {
  if (cancel_.cancel.load()) next_ = pages_.size();  // the waiting pages never start
  while (next_ < pages_.size()) {
    if (spare_.empty()) {
      Admission::Slot slot;
      if (!admission_.try_enter(slot)) break;
      spare_.push_back(std::move(slot));
    }
    slots_[next_] = std::move(spare_.back());
    spare_.pop_back();
    jobs_[next_] = std::make_unique<GenerationJob>(engine_, std::move(pages_[next_].generation));
    ++next_;
    ++running_;
  }
  // Nothing waits for them: other requests may have them.
  if (next_ == pages_.size()) spare_.clear();
}

std::vector<PageJobs::Event> PageJobs::poll(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::vector<Event> events;
  for (;;) {
    if (cancel_.cancel.load()) {
      for (size_t i = 0; i < next_; ++i) {
        if (!ended_[i]) jobs_[i]->cancel_state().request(cancel_.why());
      }
    }
    for (size_t i = 0; i < next_; ++i) {
      if (ended_[i]) continue;
      GenerationJob::Progress progress = jobs_[i]->wait(std::chrono::milliseconds(0));
      if (progress.text.empty() && progress.logprobs.empty() && !progress.finished) continue;
      if (progress.finished) {
        ended_[i] = true;
        --running_;
        spare_.push_back(std::move(slots_[i]));
      }
      events.push_back({i, std::move(progress)});
    }
    start_waiting_pages();
    if (!events.empty() || finished() || std::chrono::steady_clock::now() >= until) return events;
    // The jobs wake nobody here; a short sleep keeps a page's tokens flowing within 20 ms.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool PageJobs::finished() const {
  return running_ == 0 && next_ == pages_.size();
}

GenerationStats PageJobs::total_stats() {
  GenerationStats total;
  for (const auto& job : jobs_) {
    if (!job || !job->finished() || job->error()) continue;
    const GenerationStats& page = job->result().stats;
    total.prompt_tokens += page.prompt_tokens;
    total.cached_tokens += page.cached_tokens;
    total.image_tokens += page.image_tokens;
    total.video_tokens += page.video_tokens;
    total.completion_tokens += page.completion_tokens;
    total.image_ms += page.image_ms;
    total.prompt_ms += page.prompt_ms;
    total.decode_ms += page.decode_ms;
    total.ttft_ms = total.ttft_ms > 0 ? total.ttft_ms : page.ttft_ms;  // the first page's
    total.total_ms += page.total_ms;
    total.constraint_ms += page.constraint_ms;
    total.draft_tokens += page.draft_tokens;
    total.draft_accepted_tokens += page.draft_accepted_tokens;
    if (page.reasoning_tokens >= 0) {
      total.reasoning_tokens = std::max<int64_t>(total.reasoning_tokens, 0) + page.reasoning_tokens;
    }
  }
  return total;
}

}  // namespace qvl::server
