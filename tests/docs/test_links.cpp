// The user guide's links: every relative link and image in README.md and docs/**/*.md names a file that
// exists, and every #anchor names a heading of its target as GitHub renders it. README.md stays the front
// door, within 20 KiB. Links inside fenced code blocks and inline code are text, not links, and absolute
// URLs (http:, https:, mailto:, any other scheme) are not checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kSource = DDPLAB_SOURCE_DIR;
constexpr std::uintmax_t kReadmeMaxBytes = 20480;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Whether a line opens or closes a fenced code block (``` or ~~~, up to 3 spaces of indent). `fence` is the
// opening fence while inside a block, "" outside.
bool toggles_fence(const std::string& line, std::string& fence) {
  const auto start = line.find_first_not_of(' ');
  if (start == std::string::npos || start > 3) return false;
  const char c = line[start];
  if (c != '`' && c != '~') return false;
  const auto end = line.find_first_not_of(c, start);
  const auto run = (end == std::string::npos ? line.size() : end) - start;
  if (run < 3) return false;
  if (fence.empty()) {
    fence = std::string(run, c);
    return true;
  }
  // A closing fence is the same character, at least as long, and nothing after it but spaces.
  if (c != fence[0] || run < fence.size()) return false;
  if (end != std::string::npos && line.find_first_not_of(' ', end) != std::string::npos) return false;
  fence.clear();
  return true;
}

// The text with fenced code blocks and inline code spans blanked out. Newlines stay, so positions still
// give line numbers.
std::string prose_only(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::string fence;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const bool inside = !fence.empty();
    if (toggles_fence(line, fence) || inside) line.assign(line.size(), ' ');
    out += line;
    out += '\n';
  }
  // Inline code: a run of N backticks up to the next run of exactly N backticks.
  for (std::size_t i = 0; i < out.size();) {
    if (out[i] != '`') {
      ++i;
      continue;
    }
    std::size_t run_end = out.find_first_not_of('`', i);
    if (run_end == std::string::npos) break;
    const std::size_t run = run_end - i;
    std::size_t close = run_end;
    bool found = false;
    while ((close = out.find('`', close)) != std::string::npos) {
      const std::size_t close_end = std::min(out.find_first_not_of('`', close), out.size());
      if (close_end - close == run) {
        found = true;
        break;
      }
      close = close_end;
    }
    if (!found) {
      i = run_end;
      continue;
    }
    for (std::size_t k = i; k < close + run; ++k)
      if (out[k] != '\n') out[k] = ' ';
    i = close + run;
  }
  return out;
}

// Appends the UTF-8 bytes of code point `cp`.
void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Letters outside ASCII that GitHub keeps in a slug: Latin-1 and Latin Extended letters, Greek, Cyrillic,
// CJK ideographs. Symbols and punctuation (×, —, ≤, ...) are dropped, as GitHub drops them.
bool is_kept_non_ascii(char32_t cp) {
  if (cp >= 0xC0 && cp <= 0x24F) return cp != 0xD7 && cp != 0xF7;
  return (cp >= 0x370 && cp <= 0x3FF && cp != 0x37E && cp != 0x387) || (cp >= 0x400 && cp <= 0x4FF) ||
         (cp >= 0x4E00 && cp <= 0x9FFF);
}

// GitHub's anchor for a heading's text: links reduced to their text, lower case, every character but
// letters, digits, spaces, hyphens and underscores removed, each space a hyphen.
std::string slugify(const std::string& heading) {
  static const std::regex link(R"(!?\[([^\]]*)\]\([^)]*\))");
  const std::string text = std::regex_replace(heading, link, "$1");
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (std::isalnum(c) || c == '-' || c == '_')
        out += static_cast<char>(std::tolower(c));
      else if (c == ' ')
        out += '-';
      ++i;
      continue;
    }
    // Decode one UTF-8 sequence; a malformed byte is dropped.
    int len = (c >= 0xF0) ? 4 : (c >= 0xE0) ? 3 : (c >= 0xC0) ? 2 : 1;
    if (len == 1 || i + len > text.size()) {
      ++i;
      continue;
    }
    char32_t cp = c & (0x7F >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    if (is_kept_non_ascii(cp)) {
      if (cp >= 0xC0 && cp <= 0xDE) cp += 0x20;  // Latin-1 capitals to lower case
      append_utf8(out, cp);
    }
    i += len;
  }
  return out;
}

// The anchors of a Markdown text's ATX headings (# to ######, outside code blocks), with GitHub's
// -1, -2, ... suffixes for repeated ones.
std::set<std::string> heading_anchors(const std::string& text) {
  static const std::regex heading(R"(^ {0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$)");
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  std::string fence;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const bool inside = !fence.empty();
    if (toggles_fence(line, fence) || inside) continue;
    std::smatch m;
    if (!std::regex_match(line, m, heading)) continue;
    const std::string base = slugify(m[1].str());
    const int n = seen[base]++;
    anchors.insert(n == 0 ? base : base + "-" + std::to_string(n));
  }
  return anchors;
}

struct Link {
  int line;            // 1-based line of the link's target
  std::string target;  // as written: path, path#anchor or #anchor
};

// Every inline link and image of a Markdown text outside code, with the line its target is on.
std::vector<Link> find_links(const std::string& text) {
  static const std::regex link(R"(!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\))");
  const std::string prose = prose_only(text);
  std::vector<Link> links;
  for (auto it = std::sregex_iterator(prose.begin(), prose.end(), link); it != std::sregex_iterator(); ++it) {
    const auto pos = static_cast<std::size_t>(it->position(1));
    const int line = 1 + static_cast<int>(std::count(prose.begin(), prose.begin() + static_cast<long>(pos), '\n'));
    links.push_back({line, (*it)[1].str()});
  }
  return links;
}

// Whether a link target is an absolute URL (a scheme such as http:, https: or mailto:), which is not checked.
bool is_absolute_url(const std::string& target) {
  static const std::regex scheme(R"(^[A-Za-z][A-Za-z0-9+.-]*:)");
  return std::regex_search(target, scheme);
}

// The broken links of one Markdown file, each as "file:line: link" with the file relative to `root`.
std::vector<std::string> broken_links(const fs::path& file, const fs::path& root) {
  std::vector<std::string> broken;
  const std::string text = read_text(file);
  const std::string shown = fs::relative(file, root).generic_string();
  std::map<fs::path, std::set<std::string>> anchors_of;
  auto anchors = [&](const fs::path& target) -> const std::set<std::string>& {
    auto found = anchors_of.find(target);
    if (found == anchors_of.end()) found = anchors_of.emplace(target, heading_anchors(read_text(target))).first;
    return found->second;
  };
  for (const auto& link : find_links(text)) {
    if (link.target.empty() || is_absolute_url(link.target)) {
      if (link.target.empty()) broken.push_back(shown + ":" + std::to_string(link.line) + ": (empty)");
      continue;
    }
    const auto hash = link.target.find('#');
    const std::string path = link.target.substr(0, hash);
    const std::string anchor = hash == std::string::npos ? "" : link.target.substr(hash + 1);
    const fs::path target = path.empty() ? file : (file.parent_path() / path).lexically_normal();
    bool ok = fs::exists(target);
    if (ok && hash != std::string::npos) {
      ok = fs::is_regular_file(target) && target.extension() == ".md" && anchors(target).count(anchor) > 0;
    }
    if (!ok) broken.push_back(shown + ":" + std::to_string(link.line) + ": " + link.target);
  }
  return broken;
}

// README.md and every Markdown file under docs/.
std::vector<fs::path> guide_files(const fs::path& root) {
  std::vector<fs::path> files{root / "README.md"};
  if (fs::is_directory(root / "docs")) {
    for (const auto& entry : fs::recursive_directory_iterator(root / "docs"))
      if (entry.is_regular_file() && entry.path().extension() == ".md") files.push_back(entry.path());
  }
  std::sort(files.begin() + 1, files.end());
  return files;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

TEST(DocsLinks, EveryRelativeLinkAndAnchorResolves) {
  std::vector<std::string> broken;
  const auto files = guide_files(kSource);
  ASSERT_GT(files.size(), 1u) << "no pages under " << (kSource / "docs");
  for (const auto& file : files) {
    const auto found = broken_links(file, kSource);
    broken.insert(broken.end(), found.begin(), found.end());
  }
  EXPECT_TRUE(broken.empty()) << broken.size() << " broken link(s):\n" << joined(broken);
}

TEST(DocsLinks, ReadmeIsAtMost20KiB) {
  const auto bytes = fs::file_size(kSource / "README.md");
  EXPECT_LE(bytes, kReadmeMaxBytes) << "README.md is the front door; move reference material into docs/";
}

TEST(DocsLinks, SlugFollowsGitHub) {
  EXPECT_EQ(slugify("Getting started"), "getting-started");
  EXPECT_EQ(slugify("`ddplab simulate`: exact (and --aggregated) mode"), "ddplab-simulate-exact-and---aggregated-mode");
  EXPECT_EQ(slugify("Why the fit uses the runtime's ring steps"), "why-the-fit-uses-the-runtimes-ring-steps");
  EXPECT_EQ(slugify("5. Model-parallel training (`bench/published/layouts.toml`)"),
            "5-model-parallel-training-benchpublishedlayoutstoml");
  EXPECT_EQ(slugify("2a. GCP A3 Mega, 2 \u00d7 8 H100 (ID 2.4)"), "2a-gcp-a3-mega-2--8-h100-id-24");
  EXPECT_EQ(slugify("See [the store](results-store.md) first"), "see-the-store-first");
  EXPECT_EQ(slugify("snake_case stays"), "snake_case-stays");
  // What the checker must not accept: the colon, backticks and parentheses do not survive.
  EXPECT_NE(slugify("`ddplab simulate`: exact (and --aggregated) mode"),
            "ddplab-simulate:-exact-(and---aggregated)-mode");
  EXPECT_NE(slugify("`ddplab simulate`: exact"), "`ddplab-simulate`-exact");
}

TEST(DocsLinks, RepeatedHeadingsGetSuffixesAndCodeIsNotAHeading) {
  const auto anchors = heading_anchors("# Tests\n\n## Tests\n\n```sh\n# not a heading\n```\n### Tests ###\n");
  EXPECT_EQ(anchors, (std::set<std::string>{"tests", "tests-1", "tests-2"}));
}

TEST(DocsLinks, LinksInCodeAndAbsoluteUrlsAreNotChecked) {
  const std::string text =
      "See [a](a.md) and ![img](gui/x.png \"title\").\n"
      "`[not](a link)` and\n"
      "```\n[also not](fenced.md)\n```\n"
      "[wrapped\ntext](b.md#anchor), [web](https://example.org) [mail](mailto:x@y.z) [here](#top)\n";
  const auto links = find_links(text);
  ASSERT_EQ(links.size(), 6u);
  EXPECT_EQ(links[0].target, "a.md");
  EXPECT_EQ(links[0].line, 1);
  EXPECT_EQ(links[1].target, "gui/x.png");
  EXPECT_EQ(links[2].target, "b.md#anchor");
  EXPECT_EQ(links[2].line, 7);
  EXPECT_TRUE(is_absolute_url(links[3].target));
  EXPECT_TRUE(is_absolute_url(links[4].target));
  EXPECT_FALSE(is_absolute_url(links[5].target));
}

TEST(DocsLinks, BrokenFilesAndAnchorsAreReportedWithTheirLine) {
  ddplab::test::TempDir dir("ddplab-docs");
  fs::create_directories(dir.path() / "docs");
  std::ofstream(dir.path() / "docs" / "page.md") << "# Page\n\n## `run`: options (and defaults)\n";
  std::ofstream(dir.path() / "README.md") << "# Front\n\n"
                                             "[ok](docs/page.md#run-options-and-defaults) [self](#front)\n"
                                             "[bad anchor](docs/page.md#run:-options-and-defaults)\n"
                                             "[missing](docs/nowhere.md) [bad self](#back)\n"
                                             "```\n[fenced](docs/nowhere.md)\n```\n";
  const auto broken = broken_links(dir.path() / "README.md", dir.path());
  EXPECT_EQ(broken, (std::vector<std::string>{"README.md:4: docs/page.md#run:-options-and-defaults",
                                              "README.md:5: docs/nowhere.md", "README.md:5: #back"}));
}
