// Temporary stand-in for `qvl serve` until src/cli/main.cpp registers the subcommand.
#include <CLI/CLI.hpp>

#include "cli/serve_command.h"

int main(int argc, char** argv) {
  CLI::App app{"qvl (serve only)"};
  app.require_subcommand(1);
  qvl::cli::add_serve_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
