// Turns failed hub requests into errors that tell the user what to do next (log in, check the
// name, check the network).
#pragma once

#include <string>

#include "hub/http_client.h"

namespace qvl::hub {

struct HubRequestContext {
  std::string endpoint;
  std::string repo;
  std::string revision;
  std::string file;  // empty for repository-level requests
  bool token_sent = false;
};

// Throws qvl::Error for a transport failure or a non-2xx status. Returns when the response is a
// success (2xx, or 3xx when redirects were not followed).
void check_hub_response(const HttpResponse& response, const HubRequestContext& context);

// The qvl::Error for a host that cannot be reached.
[[noreturn]] void fail_cannot_connect(const std::string& endpoint, const std::string& detail);

}  // namespace qvl::hub
