#include "media/page_ranges.h"

#include <charconv>
#include <cstdint>

#include "base/error.h"

namespace qvl::media {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

int parse_page_number(std::string_view text, std::string_view item) {
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 1) {
    fail(ErrorCode::kInvalidArgument, "bad page range '" + std::string(item.substr(0, 32)) +
                                          "': use page numbers from 1, e.g. \"1-3,5,8-\"");
  }
  return value;
}

}  // namespace

std::vector<PageRange> parse_page_ranges(std::string_view text) {
  std::vector<PageRange> ranges;
  text = trim(text);
  if (text.empty() || text == "all") return ranges;
  if (text.size() > 1024) fail(ErrorCode::kInvalidArgument, "page range is longer than 1024 bytes");
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    const size_t dash = item.find('-');
    PageRange range;
    if (dash == std::string_view::npos) {
      range.first = range.last = parse_page_number(item, item);
    } else {
      range.first = parse_page_number(trim(item.substr(0, dash)), item);
      const std::string_view last = trim(item.substr(dash + 1));
      range.last = last.empty() ? 0 : parse_page_number(last, item);
      if (range.last != 0 && range.last < range.first) {
        fail(ErrorCode::kInvalidArgument,
             "bad page range '" + std::string(item.substr(0, 32)) + "': it ends before it starts");
      }
    }
    ranges.push_back(range);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return ranges;
}

std::string page_ranges_text(const std::vector<PageRange>& ranges) {
  std::string text;
  for (const PageRange& range : ranges) {
    if (!text.empty()) text += ',';
    text += std::to_string(range.first);
    if (range.last == range.first) continue;
    text += '-';
    if (range.last != 0) text += std::to_string(range.last);
  }
  return text;
}

std::vector<int> select_pages(const std::vector<PageRange>& ranges, int page_count, int max_pages) {
  const std::vector<PageRange> all = {PageRange{1, 0}};
  const std::vector<PageRange>& chosen = ranges.empty() ? all : ranges;
  int64_t count = 0;
  for (const PageRange& range : chosen) {
    if (range.first > page_count) {
      fail(ErrorCode::kInvalidArgument, "page " + std::to_string(range.first) +
                                            " is past the document's last page (" +
                                            std::to_string(page_count) + ")");
    }
    const int last = range.last == 0 || range.last > page_count ? page_count : range.last;
    count += last - range.first + 1;
  }
  if (count > max_pages) {
    fail(ErrorCode::kResourceExhausted,
         std::to_string(count) + " pages selected; this server reads at most " +
             std::to_string(max_pages) + " pages of a document per request (choose pages)");
  }
  std::vector<int> pages;
  for (const PageRange& range : chosen) {
    const int last = range.last == 0 || range.last > page_count ? page_count : range.last;
    for (int page = range.first; page <= last; ++page) pages.push_back(page);
  }
  return pages;
}

}  // namespace qvl::media
