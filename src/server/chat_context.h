// What one POST /v1/chat/completions keeps between its HTTP thread and its stream
// (Server::ChatContext), and how a job's end becomes an API error. Shared by chat_endpoint.cpp
// (one answer) and chat_pages.cpp (one answer per page of a document).
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "server/api_error.h"
#include "server/connection_watch.h"
#include "server/generation_job.h"
#include "server/openai_format.h"
#include "server/page_jobs.h"
#include "server/server.h"

namespace qvl::server {

struct Server::ChatContext {
  std::chrono::steady_clock::time_point received;
  std::chrono::steady_clock::time_point job_started;
  CompletionIdentity identity;
  bool include_usage = false;
  bool parse_tool_calls = false;
  bool logprobs = false;
  ReasoningOutput reasoning = ReasoningOutput::kRaw;
  double timeout_seconds = 0;
  // Destroyed bottom-up: the watch ends before the job (or pages) it points into, the slot frees
  // last (if the job did not free it when it ended).
  Admission::Slot slot;
  std::unique_ptr<GenerationJob> job;
  std::unique_ptr<PageJobs> pages;  // instead of job for "document_mode": "per_page"
  ConnectionWatch::Registration registration;
};

// The error for a request cancelled for `reason` (499 client gone, 504 deadline, 503 shutdown).
ApiError cancelled_error(CancelReason reason, double timeout_seconds);

// The error that ended the job, if it did not end normally.
std::optional<ApiError> job_failure(GenerationJob& job, double timeout_seconds);

}  // namespace qvl::server
