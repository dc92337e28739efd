#include "yaml_input.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include <yaml-cpp/eventhandler.h>

namespace kpack {
namespace {

// The position (1-based line and column, in bytes) of text[at].
SourceLoc LocAt(const std::string& file, const std::string& text, size_t at) {
  int line = 1, col = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return SourceLoc{file, line, col};
}

// The length of the UTF-8 sequence at text[at], or 0 if it is not one
// (overlong forms, surrogates and code points past U+10FFFF included).
size_t Utf8Length(const std::string& text, size_t at) {
  auto byte = [&](size_t i) { return i < text.size() ? static_cast<unsigned char>(text[i]) : 0u; };
  auto cont = [&](size_t i) { return (byte(i) & 0xC0) == 0x80; };
  unsigned c = byte(at);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(at + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned c1 = byte(at + 1);
    if (c == 0xE0 && c1 < 0xA0) return 0;   // overlong
    if (c == 0xED && c1 >= 0xA0) return 0;  // UTF-16 surrogate
    return cont(at + 1) && cont(at + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned c1 = byte(at + 1);
    if (c == 0xF0 && c1 < 0x90) return 0;   // overlong
    if (c == 0xF4 && c1 >= 0x90) return 0;  // past U+10FFFF
    return cont(at + 1) && cont(at + 2) && cont(at + 3) ? 4 : 0;
  }
  return 0;
}

// Thrown from the event handler to stop the parser where the limit is hit.
class LimitExceeded : public YAML::Exception {
 public:
  LimitExceeded(const YAML::Mark& mark, const std::string& msg) : YAML::Exception(mark, msg) {}
};

// Walks the parser's events without building a tree: tracks the depth and
// the size every anchored node would have when expanded, so that aliases
// are charged what they stand for.
class LimitChecker : public YAML::EventHandler {
 public:
  explicit LimitChecker(const YamlLimits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    Leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchored_.find(anchor);
    Add(mark, it == anchored_.end() ? 1 : it->second);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    uint64_t size = 0;          // nodes so far, the collection itself included
    YAML::anchor_t anchor = 0;  // of the collection, 0 if none
  };

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor) anchored_[anchor] = 1;
    Add(mark, 1);
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (static_cast<int>(frames_.size()) > limits_.max_depth)
      throw LimitExceeded(mark, "nesting deeper than " + std::to_string(limits_.max_depth) +
                                    " levels; a manifest is a few levels deep");
    frames_.push_back(Frame{1, anchor});
    Count(mark, 1);
  }
  void Close() {
    Frame done = frames_.back();
    frames_.pop_back();
    if (done.anchor) anchored_[done.anchor] = done.size;
    frames_.back().size += done.size;
  }
  void Add(const YAML::Mark& mark, uint64_t n) {
    frames_.back().size += n;
    Count(mark, n);
  }
  // Every size stays at most max_nodes + 1: the walk stops as soon as the
  // document's total passes the limit, so no sum can overflow.
  void Count(const YAML::Mark& mark, uint64_t n) {
    total_ += n;
    if (total_ > limits_.max_nodes)
      throw LimitExceeded(mark, "the document expands to more than " + std::to_string(limits_.max_nodes) +
                                    " nodes once aliases are followed (an alias bomb?)");
  }

  const YamlLimits& limits_;
  std::vector<Frame> frames_{1};
  std::map<YAML::anchor_t, uint64_t> anchored_;
  uint64_t total_ = 0;  // nodes of the document so far, aliases expanded
};

// Stops at the start of a second document.
class SecondDocument : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    throw LimitExceeded(mark, "a second YAML document; a manifest holds exactly one");
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

std::optional<YAML::Node> ParseManifestText(const std::string& file, const std::string& text,
                                            Diagnostics& diag, const YamlLimits& limits) {
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\0') {
      diag.Error(LocAt(file, text, i), "NUL byte; a manifest is UTF-8 text");
      return std::nullopt;
    }
    size_t n = Utf8Length(text, i);
    if (n == 0) {
      static const char kHex[] = "0123456789abcdef";
      unsigned char c = static_cast<unsigned char>(text[i]);
      diag.Error(LocAt(file, text, i), std::string("byte 0x") + kHex[c >> 4] + kHex[c & 15] +
                                           " is not UTF-8; a manifest is UTF-8 text");
      return std::nullopt;
    }
    i += n;
  }
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    LimitChecker checker(limits);
    if (parser.HandleNextDocument(checker)) {
      SecondDocument second;
      parser.HandleNextDocument(second);
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    diag.Error(SourceLoc{file, e.mark.line + 1, e.mark.column + 1}, e.msg);
    return std::nullopt;
  }
}

}  // namespace kpack
