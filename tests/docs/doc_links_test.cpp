// The links of README.md and docs/*.md lead somewhere: every relative link
// names a file of the repository, and every #anchor a heading of its target
// (as code hosts make anchors: lower case, punctuation dropped, spaces as -).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path root = CORTEX_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "## POST /v1/chat/completions" -> "post-v1chatcompletions".
std::string anchor_of(const std::string& heading) {
  std::string out;
  for (const char ch : heading) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '_' || c == '-') out += static_cast<char>(std::tolower(c));
    else if (c == ' ') out += '-';
  }
  return out;
}

// The anchors of a Markdown file's headings (outside fenced blocks).
std::set<std::string> anchors(const fs::path& p) {
  std::set<std::string> out;
  std::istringstream in(read(p));
  std::string line;
  bool fenced = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.empty() || line[0] != '#') continue;
    const size_t text = line.find_first_not_of('#');
    if (text == std::string::npos || line[text] != ' ') continue;
    out.insert(anchor_of(line.substr(text + 1)));
  }
  return out;
}

std::vector<fs::path> documents() {
  std::vector<fs::path> out = {root / "README.md"};
  for (const auto& e : fs::directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") out.push_back(e.path());
  return out;
}

TEST(DocLinks, RelativeLinksNameFilesAndHeadingsThatExist) {
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  for (const fs::path& doc : documents()) {
    SCOPED_TRACE(doc.string());
    const std::string text = read(doc);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0 || target.rfind("mailto:", 0) == 0) continue;
      const size_t hash = target.find('#');
      const std::string file = target.substr(0, hash);
      const fs::path path = file.empty() ? doc : doc.parent_path() / file;
      ASSERT_TRUE(fs::exists(path)) << "a link to " << target << ": no such file";
      if (hash == std::string::npos || path.extension() != ".md") continue;
      const std::string anchor = target.substr(hash + 1);
      EXPECT_TRUE(anchors(path).count(anchor)) << "a link to " << target << ": " << path.filename().string()
                                               << " has no heading with that anchor";
    }
  }
}

}  // namespace
