#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace qvl {
namespace {

// Feeds every delta, returns everything emitted (including the final flush).
struct StreamOutput {
  std::string text;
  bool stopped = false;
  std::vector<std::string> pieces;
};

StreamOutput feed_all(StopMatcher& matcher, const std::vector<std::string>& deltas) {
  StreamOutput r;
  for (const std::string& d : deltas) {
    StopMatcher::Result res = matcher.feed(d);
    r.pieces.push_back(res.text);
    r.text += res.text;
    r.stopped = res.stopped;
    if (res.stopped) return r;
  }
  r.pieces.push_back(matcher.flush());
  r.text += r.pieces.back();
  return r;
}

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xE  ? 3
                     : (c >> 3) == 0x1E ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

TEST(StopMatcher, NoStopsPassesThroughImmediately) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("Hello").text, "Hello");
  EXPECT_EQ(m.feed(" wor").text, " wor");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  StopMatcher only_empty({""});
  EXPECT_EQ(only_empty.feed("abc").text, "abc");
  StopMatcher mixed({"", "c", ""});
  const StopMatcher::Result r = mixed.feed("abcd");
  EXPECT_EQ(r.text, "ab");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcher, StopSpanningSeveralDeltas) {
  StopMatcher m({"STOP"});
  StopMatcher::Result r = m.feed("Hello S");
  EXPECT_EQ(r.text, "Hello ");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.held_bytes(), 1u);
  r = m.feed("TO");
  EXPECT_EQ(r.text, "");
  EXPECT_FALSE(r.stopped);
  r = m.feed("P and more");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(m.matched(), "STOP");
  // Stopped for good.
  r = m.feed("again STOP");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, FalseStartIsReleased) {
  StopMatcher m({"STOP"});
  const StreamOutput r = feed_all(m, {"a ST", "A", "RT", " b"});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "a START b");
  EXPECT_EQ(r.pieces[1], "STA");
}

TEST(StopMatcher, FlushReturnsHeldBackText) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.feed("abc ST").text, "abc ");
  EXPECT_EQ(m.flush(), "ST");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.matched(), "");
}

TEST(StopMatcher, MultipleStopStrings) {
  StopMatcher m({"\n\n", "END"});
  const StreamOutput r = feed_all(m, {"line1\n", "line2", "EN", "D tail"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "line1\nline2");
  EXPECT_EQ(m.matched(), "END");

  StopMatcher m2({"\n\n", "END"});
  const StreamOutput r2 = feed_all(m2, {"a\n", "\nEND"});
  EXPECT_TRUE(r2.stopped);
  EXPECT_EQ(r2.text, "a");
  EXPECT_EQ(m2.matched(), "\n\n");
}

TEST(StopMatcher, OverlappingPrefixes) {
  {  // self-overlapping stop: needs the KMP fallback, not a restart
    StopMatcher m({"aab"});
    const StreamOutput r = feed_all(m, {"a", "a", "a", "b", "c"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "a");
  }
  {  // the shorter stop completes first
    StopMatcher m({"abc", "ab"});
    const StreamOutput r = feed_all(m, {"xab", "c"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "x");
    EXPECT_EQ(m.matched(), "ab");
  }
  {  // a later-starting stop completes before an earlier-starting one could
    StopMatcher m({"abcd", "bc"});
    const StreamOutput r = feed_all(m, {"ab", "cd"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "a");
    EXPECT_EQ(m.matched(), "bc");
  }
  {  // both complete on the same byte: the longer one (earlier start) is hidden
    StopMatcher m({"bc", "abc"});
    const StreamOutput r = feed_all(m, {"zab", "c"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "z");
    EXPECT_EQ(m.matched(), "abc");
  }
}

TEST(StopMatcher, StopAtTheVeryStart) {
  StopMatcher m({"<"});
  const StopMatcher::Result r = m.feed("<tag>");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.stopped);
}

TEST(StopMatcher, UnicodeStops) {
  StopMatcher m({"终了", "é"});
  StopMatcher::Result r = m.feed("你好终");
  EXPECT_EQ(r.text, "你好");
  r = m.feed("点è");  // shares the lead byte with é, then differs
  EXPECT_EQ(r.text, "终点è");
  r = m.feed("终");
  EXPECT_EQ(r.text, "");
  r = m.feed("了!");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(m.matched(), "终了");
}

TEST(StopMatcher, NeverSplitsACharacterEvenForMalformedStops) {
  // "\xA9z" begins inside é (C3 A9): holding only the A9 byte would split the character.
  StopMatcher m({"\xA9z"});
  StopMatcher::Result r = m.feed("aé");
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(m.held_bytes(), 2u);
  r = m.feed("b");
  EXPECT_EQ(r.text, "éb");
}

// Random texts, stops and delta splits against a direct definition: the output is the text
// cut before the first stop occurrence to complete (the longest one if several end together).
TEST(StopMatcher, MatchesReferenceOnRandomStreams) {
  std::mt19937 rng(2024);
  const std::vector<std::string> alphabet = {"a", "b", "c", "é", "😀"};
  auto random_string = [&](int max_chars) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % max_chars);
    for (int i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    return s;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    const int n_stops = static_cast<int>(rng() % 4);
    size_t longest = 0;
    for (int i = 0; i < n_stops; ++i) {
      stops.push_back(random_string(4));
      longest = std::max(longest, stops.back().size());
    }
    std::vector<std::string> deltas;
    std::string text;
    const int n_deltas = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n_deltas; ++i) {
      deltas.push_back(random_string(3));
      text += deltas.back();
    }

    std::string expected = text;
    bool expect_stop = false;
    for (size_t end = 1; end <= text.size() && !expect_stop; ++end) {
      size_t best = 0;
      for (const std::string& s : stops) {
        if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0)
          best = std::max(best, s.size());
      }
      if (best > 0) {
        expected = text.substr(0, end - best);
        expect_stop = true;
      }
    }

    StopMatcher m(stops);
    std::string out;
    bool stopped = false;
    for (const std::string& d : deltas) {
      const StopMatcher::Result res = m.feed(d);
      ASSERT_TRUE(valid_utf8(res.text)) << "trial " << trial;
      out += res.text;
      stopped = res.stopped;
      if (stopped) break;
      // Valid UTF-8 stops begin on a character boundary: at most a stop's proper prefix waits.
      ASSERT_LT(m.held_bytes(), std::max<size_t>(longest, 1)) << "trial " << trial;
    }
    if (!stopped) out += m.flush();
    ASSERT_EQ(stopped, expect_stop) << "trial " << trial;
    ASSERT_EQ(out, expected) << "trial " << trial;
  }
}

}  // namespace
}  // namespace qvl
