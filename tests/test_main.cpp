#include <gtest/gtest.h>

#if QVL_TESTS_MEDIA_WORKER
#include "media/media_worker.h"
#endif

int main(int argc, char** argv) {
#if QVL_TESTS_MEDIA_WORKER
  // The tests run the real media worker: this executable started again (media_worker.h).
  qvl::media::run_worker_if_requested(argc, argv);
#endif
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
