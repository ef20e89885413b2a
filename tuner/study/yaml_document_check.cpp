#include "tuner/study/yaml_document_check.h"

#include <yaml-cpp/depthguard.h>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "tuner/base/text.h"

namespace tune::tuner {
namespace {

// Tracks the open mappings and sequences, the size of each anchored node and the keys seen in
// each mapping; keeps the first problem. Not thread-safe; one per parse.
class DocumentCheck : public YAML::EventHandler {
 public:
  explicit DocumentCheck(std::string file) : m_file(std::move(file)) {}

  // The first problem found ("FILE:LINE: key 'a.b': ..."), if any.
  const std::optional<std::string>& error() const { return m_error; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++m_documents > 1)
      fail(mark, "(top level)", "a second YAML document ('---'); a study file holds exactly one");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    leaf(mark, anchor, "null");
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    leaf(mark, anchor, value);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (m_error) return;
    const auto it = m_anchors.find(anchor);
    if (it == m_anchors.end()) {
      // yaml-cpp rejects unknown anchors itself: this one is still open, so the alias sits
      // inside the node it names and the tree would be a cycle.
      return fail(mark, path_of_next(), "a YAML alias inside the node it names (a cycle)");
    }
    if (count(mark, it->second.size)) node(mark, it->second.size, it->second.scalar);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor, /*is_map=*/false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor, /*is_map=*/true);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Anchored {
    std::uint64_t size = 1;             // nodes, aliases expanded
    std::optional<std::string> scalar;  // its text, when a scalar (it may serve as a key)
  };
  struct Frame {
    bool is_map = false;
    YAML::Mark mark;
    std::string path;  // this node's key in the Parser's notation (a.b[2].c); "" for the root
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::uint64_t size = 1;                      // nodes so far, itself included, aliases expanded
    std::size_t index = 0;                       // next item (sequence)
    bool at_key = true;                          // the next node is a key (mapping)
    std::string key;                             // the key whose value comes next (mapping)
    std::unordered_map<std::string, int> lines;  // key -> line of its first occurrence
  };

  void fail(const YAML::Mark& mark, const std::string& path, const std::string& what) {
    if (!m_error) m_error = fmt::format("{}:{}: key '{}': {}", m_file, mark.line + 1, path, what);
  }

  // The key path of the node that starts now.
  std::string path_of_next() const {
    if (m_stack.empty()) return "(top level)";
    const Frame& f = m_stack.back();
    if (!f.is_map) return fmt::format("{}[{}]", f.path, f.index);
    const std::string key = f.at_key ? std::string("(a key)") : escape_controls(f.key);
    return f.path.empty() ? key : f.path + "." + key;
  }

  // Counts `size` more nodes (an alias counts all of its anchor's) toward the bound.
  bool count(const YAML::Mark& mark, std::uint64_t size) {
    m_total += size;
    if (m_total <= k_max_yaml_nodes) return true;
    fail(mark, path_of_next(),
         fmt::format("the study file grows past {} nodes once its YAML aliases are expanded "
                     "(an alias bomb?); write the values out instead",
                     k_max_yaml_nodes));
    return false;
  }

  // A complete node of `size` nodes (already counted): it advances the enclosing sequence or
  // mapping. A scalar key is checked against the keys before it in the same mapping.
  void node(const YAML::Mark& mark, std::uint64_t size, const std::optional<std::string>& scalar) {
    if (m_stack.empty()) return;
    Frame& f = m_stack.back();
    f.size += size;
    if (!f.is_map) {
      ++f.index;
    } else if (!f.at_key) {
      f.at_key = true;
    } else {
      f.at_key = false;
      f.key = scalar.value_or("(a key)");
      if (!scalar) return;
      const auto [first, inserted] = f.lines.emplace(*scalar, mark.line + 1);
      if (!inserted) {
        const auto key = escape_controls(*scalar);
        fail(mark, f.path.empty() ? key : f.path + "." + key,
             fmt::format("duplicate key (first at line {}); give each key once", first->second));
      }
    }
  }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string& text) {
    if (m_error) return;
    if (anchor != YAML::NullAnchor) m_anchors[anchor] = Anchored{1, text};
    if (count(mark, 1)) node(mark, 1, text);
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    if (m_error) return;
    Frame f;
    f.is_map = is_map;
    f.mark = mark;
    f.anchor = anchor;
    if (!m_stack.empty()) f.path = path_of_next();
    if (m_stack.size() >= k_max_yaml_depth)
      return fail(mark, f.path, fmt::format("nested deeper than {} levels", k_max_yaml_depth));
    if (count(mark, 1)) m_stack.push_back(std::move(f));
  }

  void close() {
    if (m_error) return;
    Frame f = std::move(m_stack.back());
    m_stack.pop_back();
    if (f.anchor != YAML::NullAnchor) m_anchors[f.anchor] = Anchored{f.size, std::nullopt};
    node(f.mark, f.size, std::nullopt);
  }

  std::string m_file;
  std::optional<std::string> m_error;
  int m_documents = 0;
  std::uint64_t m_total = 0;  // nodes so far, aliases expanded
  std::vector<Frame> m_stack;
  std::unordered_map<YAML::anchor_t, Anchored> m_anchors;
};

}  // namespace

Result<void> check_yaml_document(const std::string& yaml_text, const std::string& file) {
  try {
    std::istringstream in(yaml_text);
    YAML::Parser events(in);
    DocumentCheck check(file);
    while (events.HandleNextDocument(check) && !check.error()) {
    }
    if (check.error()) return std::unexpected(*check.error());
  } catch (const YAML::Exception& e) {
    return std::unexpected(yaml_error_message(e, file, yaml_text));
  }
  return {};
}

namespace {

// The first line up to `last` (0-based) indented with a tab, 1-based; 0 when none. YAML forbids
// tabs in indentation, and yaml-cpp's words for it ("illegal map value", "end of map not found")
// never say so.
int tab_indented_line(std::string_view text, int last) {
  int line = 0;
  std::size_t begin = 0;
  while (begin <= text.size() && line <= last) {
    auto end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const auto row = text.substr(begin, end - begin);
    const auto content = row.find_first_not_of(" \t");
    const auto indent = row.substr(0, content == std::string_view::npos ? row.size() : content);
    if (content != std::string_view::npos && indent.find('\t') != std::string_view::npos)
      return line + 1;
    ++line;
    begin = end + 1;
  }
  return 0;
}

}  // namespace

std::string yaml_error_message(const YAML::Exception& e, const std::string& file,
                               std::string_view yaml_text) {
  if (const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&e)) {
    return fmt::format(
        "{}:{}: invalid YAML: nested {} levels deep here, past the parser's limit (a study file "
        "needs a few levels; look for unclosed [ or {{ or runaway indentation)",
        file, e.mark.line + 1, deep->depth());
  }
  if (const int tab = tab_indented_line(yaml_text, e.mark.line + 1); tab > 0) {
    return fmt::format(
        "{}:{}: invalid YAML: line {} is indented with a tab, which YAML does not allow; indent "
        "with spaces ({})",
        file, tab, tab, e.msg);
  }
  return fmt::format("{}:{}: invalid YAML: {}", file, e.mark.line + 1, e.msg);
}

}  // namespace tune::tuner
