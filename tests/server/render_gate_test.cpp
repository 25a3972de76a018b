// The document render gate: at most N renders at once; a caller waits for a place or gives up.
#include "server/render_gate.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

namespace qvl::server {
namespace {

using std::chrono::milliseconds;

TEST(RenderGate, HoldsAtMostItsPlaces) {
  RenderGate gate(2);
  RenderGate::Ticket a = gate.enter(milliseconds(0));
  RenderGate::Ticket b = gate.enter(milliseconds(0));
  EXPECT_TRUE(a.held());
  EXPECT_TRUE(b.held());
  EXPECT_FALSE(gate.enter(milliseconds(0)).held());
  {
    RenderGate::Ticket moved = std::move(a);
    EXPECT_FALSE(a.held());  // the move emptied it
    EXPECT_FALSE(gate.enter(milliseconds(0)).held());
  }  // moved's place is free again
  EXPECT_TRUE(gate.enter(milliseconds(0)).held());
}

TEST(RenderGate, AWaiterGetsThePlaceWhenItFrees) {
  RenderGate gate(1);
  auto first = std::make_unique<RenderGate::Ticket>(gate.enter(milliseconds(0)));
  ASSERT_TRUE(first->held());
  bool got = false;
  std::thread waiter([&] { got = gate.enter(milliseconds(60000)).held(); });
  first.reset();  // frees the place; the waiter takes it (whenever it started waiting)
  waiter.join();
  EXPECT_TRUE(got);
}

}  // namespace
}  // namespace qvl::server
