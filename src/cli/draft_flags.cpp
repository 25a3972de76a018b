#include "cli/draft_flags.h"

namespace qvl::cli {

void add_draft_flags(CLI::App* cmd, SpeculativeOptions& options) {
  cmd->add_option("--draft-tokens", options.draft_tokens,
                  "Speculative decoding: tokens guessed per step and verified in one batched "
                  "step, the answer unchanged (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0, 14));
  cmd->add_flag("!--no-prompt-lookup", options.prompt_lookup,
                "Do not draft from text earlier in the prompt or answer");
  cmd->add_flag("!--no-jump-forward", options.jump_forward,
                "Do not draft a response format's forced text");
}

}  // namespace qvl::cli
