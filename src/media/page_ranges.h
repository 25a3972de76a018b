// Page selections such as "1-3,5,8-": parsed where the request arrives (so a malformed one is a
// 400 before any rendering), resolved against the page count where the document is opened.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qvl::media {

struct PageRange {
  int first = 1;  // 1-based, inclusive
  int last = 0;   // inclusive; 0 = to the last page
};

// "" or "all" -> every page. Otherwise comma-separated items "N", "N-M" or "N-" (spaces allowed
// around items), pages counted from 1, N <= M. Throws qvl::Error(kInvalidArgument) naming the
// item that is wrong.
std::vector<PageRange> parse_page_ranges(std::string_view text);

// The text form parse_page_ranges reads back.
std::string page_ranges_text(const std::vector<PageRange>& ranges);

// The 1-based page numbers selected, in the order given (repeats kept). Throws
// qvl::Error(kInvalidArgument) when a range starts past the last page, and
// kResourceExhausted when more than max_pages pages are selected (checked before listing them).
std::vector<int> select_pages(const std::vector<PageRange>& ranges, int page_count, int max_pages);

}  // namespace qvl::media
