// Serves a tiny synthetic model as "qvl-test/tiny-model" on a loopback port until killed, for
// trying `qvl pull` by hand:  HF_ENDPOINT=<printed endpoint> qvl pull qvl-test/tiny-model
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "hub/fake_hub.h"

int main(int argc, char** argv) {
  const size_t shard_bytes = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : (size_t{8} << 20);
  qvl::testing::FakeHub hub;
  hub.add_repo("qvl-test/tiny-model", "0123456789abcdef0123456789abcdef01234567",
               qvl::testing::make_tiny_model_files(shard_bytes));
  if (argc > 2) hub.drop_connection_once(argv[2]);
  std::cout << hub.endpoint() << std::endl;
  while (true) ::pause();
}
