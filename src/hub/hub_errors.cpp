#include "hub/hub_errors.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "hub/hub_env.h"

namespace qvl::hub {
namespace {

// The hub's own explanation, from X-Error-Message or a JSON {"error": ...} body, shortened.
std::string server_message(const HttpResponse& response) {
  std::string message = response.header("x-error-message");
  if (message.empty() && !response.body.empty()) {
    const auto json = nlohmann::json::parse(response.body, nullptr, false);
    if (json.is_object() && json.contains("error") && json["error"].is_string()) {
      message = json["error"].get<std::string>();
    }
  }
  if (message.size() > 300) message = message.substr(0, 300) + "...";
  return message.empty() ? std::string() : " (hub says: " + message + ")";
}

std::string what(const HubRequestContext& context) {
  std::string text = context.repo;
  if (!context.revision.empty()) text += "@" + context.revision;
  if (!context.file.empty()) text += ", file " + context.file;
  return text;
}

std::string login_advice(const HubRequestContext& context) {
  return "To log in, create an access token at https://huggingface.co/settings/tokens and set "
         "HF_TOKEN=<token> in the environment, or save it with `hf auth login` (it is read from " +
         token_path_from_env() + "). For a gated model, also accept its conditions at " +
         context.endpoint + "/" + context.repo + ".";
}

}  // namespace

void fail_cannot_connect(const std::string& endpoint, const std::string& detail) {
  fail(ErrorCode::kIo, "cannot reach the Hugging Face hub at " + endpoint + " (" + detail +
                           "). Check the network connection, proxy settings or HF_ENDPOINT; "
                           "to use a model that is already in the cache, pass --offline or set "
                           "HF_HUB_OFFLINE=1.");
}

void check_hub_response(const HttpResponse& response, const HubRequestContext& context) {
  switch (response.failure) {
    case TransportFailure::kNone:
      break;
    case TransportFailure::kCannotConnect:
      fail_cannot_connect(context.endpoint, response.error);
    case TransportFailure::kInterrupted:
      fail(ErrorCode::kIo, "the connection to the hub broke while fetching " + what(context) +
                               " (" + response.error + "); run the command again to resume");
    default:
      fail(ErrorCode::kIo,
           "request to the hub failed for " + what(context) + ": " + response.error);
  }
  const long status = response.status;
  if (status >= 200 && status < 400) return;
  const std::string error_code = response.header("x-error-code");
  const std::string hub_says = server_message(response);
  if (status == 401 || status == 403) {
    std::string reason;
    if (error_code == "GatedRepo") {
      reason = "the model is gated: you must be logged in and have accepted its conditions";
    } else if (context.token_sent) {
      reason = "your token was rejected or has no access to this repository";
    } else {
      reason = "the repository is private or gated (or does not exist) and no token was sent";
    }
    fail(ErrorCode::kInvalidArgument, "access denied by the hub (HTTP " + std::to_string(status) +
                                          ") for " + what(context) + ": " + reason + hub_says +
                                          ". " + login_advice(context));
  }
  if (status == 404) {
    if (error_code == "RevisionNotFound") {
      fail(ErrorCode::kNotFound, "revision '" + context.revision + "' not found in " +
                                     context.repo + " on " + context.endpoint + hub_says);
    }
    if (error_code == "EntryNotFound" || (!context.file.empty() && error_code.empty())) {
      fail(ErrorCode::kNotFound, "file '" + context.file + "' not found in " + context.repo + "@" +
                                     context.revision + " on " + context.endpoint + hub_says);
    }
    fail(ErrorCode::kNotFound,
         "repository " + context.repo + " not found on " + context.endpoint + hub_says +
             ". Check the spelling (Org/Name, case-sensitive); private repositories also need a "
             "token (HF_TOKEN).");
  }
  if (status == 429) {
    fail(ErrorCode::kResourceExhausted,
         "the hub is rate-limiting requests (HTTP 429) for " + what(context) + hub_says +
             "; wait a moment and retry, or log in (HF_TOKEN) for higher limits");
  }
  fail(ErrorCode::kIo,
       "the hub answered HTTP " + std::to_string(status) + " for " + what(context) + hub_says);
}

}  // namespace qvl::hub
