// cuda_entry.cc - the entry's declaration in CUDA C++ source (see cuda_entry.h).
#include "cuda_entry.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>
#include <system_error>

#include "fs_util.h"

#include "cpp_text.h"

namespace kpack {
namespace {

using cpp_text::IsDigit;
using cpp_text::IsIdentChar;
using cpp_text::IsIdentStart;
using cpp_text::StartsWith;
using cpp_text::Trim;

// `text` with comments, string literals and character literals replaced by
// spaces; newlines are kept, so every other character keeps its line and
// column.
std::string BlankCommentsAndLiterals(const std::string& text) {
  std::string out = text;
  const size_t n = text.size();
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < n; ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  size_t i = 0;
  while (i < n) {
    char c = text[i];
    char next = i + 1 < n ? text[i + 1] : '\0';
    if (c == '/' && next == '/') {  // to the end of the line; `\` continues it
      size_t j = i + 2;
      while (j < n && text[j] != '\n') {
        if (text[j] == '\\' && j + 1 < n && text[j + 1] == '\n') {
          j += 2;
        } else if (text[j] == '\\' && j + 2 < n && text[j + 1] == '\r' && text[j + 2] == '\n') {
          j += 3;
        } else {
          ++j;
        }
      }
      blank(i, j);
      i = j;
      continue;
    }
    if (c == '/' && next == '*') {
      size_t j = text.find("*/", i + 2);
      size_t end = j == std::string::npos ? n : j + 2;
      blank(i, end);
      i = end;
      continue;
    }
    if (c == '"') {
      // An encoding prefix (u8, u, U, L) and R of a raw string go with it.
      size_t s = i;
      while (s > 0 && IsIdentChar(text[s - 1])) --s;
      std::string prefix = text.substr(s, i - s);
      bool raw = prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR";
      bool known = raw || prefix == "u8" || prefix == "u" || prefix == "U" || prefix == "L";
      size_t from = known ? s : i;
      size_t end = n;
      if (raw) {
        size_t open = text.find('(', i + 1);
        if (open != std::string::npos) {
          std::string close = ")" + text.substr(i + 1, open - i - 1) + "\"";
          size_t at = text.find(close, open + 1);
          end = at == std::string::npos ? n : at + close.size();
        }
      } else {
        size_t j = i + 1;
        while (j < n && text[j] != '"' && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
        end = j < n && text[j] == '"' ? j + 1 : std::min(j, n);
      }
      blank(from, end);
      i = end;
      continue;
    }
    if (c == '\'') {
      // A digit separator (1'000'000) when the token it is in starts with a
      // digit; else a character literal (u8'a' included).
      size_t s = i;
      while (s > 0 && (IsIdentChar(text[s - 1]) || text[s - 1] == '\'' || text[s - 1] == '.')) --s;
      if (s < i && IsDigit(text[s])) {
        ++i;
        continue;
      }
      size_t j = i + 1;
      while (j < n && text[j] != '\'' && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      size_t end = j < n && text[j] == '\'' ? j + 1 : std::min(j, n);
      blank(i, end);
      i = end;
      continue;
    }
    ++i;
  }
  return out;
}

struct Token {
  enum Kind { kIdent, kNumber, kPunct, kDirective } kind;
  std::string text;
  int line = 0, column = 0;
  // kDirective: an #include and its file name, when it is one.
  bool include = false;
  bool angled = false;
};

// The tokens of `clean` (BlankCommentsAndLiterals of `original`).  A
// preprocessor line (continuations included) is one kDirective token; an
// #include's file name is read from `original`, where the quoted name was
// not blanked.
std::vector<Token> Tokenize(const std::string& clean, const std::string& original) {
  std::vector<Token> tokens;
  const size_t n = clean.size();
  size_t i = 0, line_start = 0;
  if (StartsWith(clean, "\xEF\xBB\xBF")) i = line_start = 3;  // a UTF-8 byte order mark
  int line = 1;
  bool at_line_start = true;
  auto column = [&](size_t at) { return static_cast<int>(at - line_start) + 1; };
  while (i < n) {
    char c = clean[i];
    if (c == '\n') {
      ++i;
      ++line;
      line_start = i;
      at_line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '#' && at_line_start) {
      Token t{Token::kDirective, "#", line, column(i)};
      // The directive's extent: to the end of the line, `\` continuing it.
      size_t end = i;
      while (end < n) {
        size_t eol = clean.find('\n', end);
        if (eol == std::string::npos) {
          end = n;
          break;
        }
        size_t last = eol;
        while (last > end && (clean[last - 1] == '\r' || clean[last - 1] == ' ' || clean[last - 1] == '\t')) --last;
        if (last > end && clean[last - 1] == '\\') {
          end = eol + 1;
          continue;
        }
        end = eol;
        break;
      }
      // `# include "x"` / `#include <x>`, read from the original text.
      size_t p = i + 1;
      while (p < end && (clean[p] == ' ' || clean[p] == '\t')) ++p;
      size_t word = p;
      while (p < end && IsIdentChar(clean[p])) ++p;
      if (clean.compare(word, p - word, "include") == 0) {
        while (p < end && (original[p] == ' ' || original[p] == '\t')) ++p;
        char open = p < end ? original[p] : '\0';
        char close = open == '"' ? '"' : open == '<' ? '>' : '\0';
        if (close != '\0') {
          size_t q = original.find(close, p + 1);
          if (q != std::string::npos && q < end) {
            t.include = true;
            t.angled = open == '<';
            t.text = original.substr(p + 1, q - p - 1);
          }
        }
      }
      tokens.push_back(std::move(t));
      for (size_t k = i; k < end; ++k) {
        if (clean[k] == '\n') {
          ++line;
          line_start = k + 1;
        }
      }
      i = end;
      continue;
    }
    at_line_start = false;
    size_t start = i;
    if (IsIdentStart(c)) {
      while (i < n && IsIdentChar(clean[i])) ++i;
      tokens.push_back({Token::kIdent, clean.substr(start, i - start), line, column(start)});
      continue;
    }
    if (IsDigit(c) || (c == '.' && i + 1 < n && IsDigit(clean[i + 1]))) {
      ++i;
      while (i < n) {
        char d = clean[i];
        if ((d == '+' || d == '-') && (clean[i - 1] == 'e' || clean[i - 1] == 'E' || clean[i - 1] == 'p' ||
                                       clean[i - 1] == 'P')) {
          ++i;
        } else if (IsIdentChar(d) || d == '.' || d == '\'') {
          ++i;
        } else {
          break;
        }
      }
      tokens.push_back({Token::kNumber, clean.substr(start, i - start), line, column(start)});
      continue;
    }
    if ((c == ':' && i + 1 < n && clean[i + 1] == ':') || (c == '-' && i + 1 < n && clean[i + 1] == '>')) {
      tokens.push_back({Token::kPunct, clean.substr(i, 2), line, column(i)});
      i += 2;
      continue;
    }
    tokens.push_back({Token::kPunct, std::string(1, c), line, column(i)});
    ++i;
  }
  return tokens;
}

bool IsPunct(const Token& t, std::string_view p) { return t.kind == Token::kPunct && t.text == p; }
bool IsIdent(const Token& t, std::string_view p) { return t.kind == Token::kIdent && t.text == p; }

// Declaration specifiers and attributes without arguments: they make no
// declaration by themselves (a return type or `template` must be there).
const std::set<std::string_view>& Specifiers() {
  static const std::set<std::string_view> kSet = {
      "static",     "inline",   "__inline__", "__forceinline__", "__noinline__", "extern",
      "constexpr",  "consteval", "__host__",   "__global__",      "__device__",   "virtual",
      "friend",     "explicit", "__restrict__", "__grid_constant__"};
  return kSet;
}

// Words that make a statement, never a declaration's prefix.
const std::set<std::string_view>& StatementWords() {
  static const std::set<std::string_view> kSet = {
      "return", "else",     "if",       "while",    "for",      "do",     "switch",  "case",
      "default", "goto",    "throw",    "new",      "delete",   "sizeof", "co_return", "co_await",
      "co_yield", "typedef", "using",   "operator", "namespace", "break", "continue", "alignof",
      "static_assert", "template"};
  return kSet;
}

// Words that take a parenthesized argument inside a declaration's prefix.
const std::set<std::string_view>& AttributeWords() {
  static const std::set<std::string_view> kSet = {"__launch_bounds__", "__cluster_dims__", "__attribute__",
                                                  "__maxnreg__",       "__declspec",       "decltype",
                                                  "alignas",           "__align__",        "noexcept"};
  return kSet;
}

// Words that are never the qualifier of a name (`void ::k(`).
bool IsKeywordLike(const std::string& word) {
  static const std::set<std::string_view> kBuiltin = {"void", "int",   "unsigned", "signed", "long", "short",
                                                      "char", "float", "double",   "bool",   "auto", "const",
                                                      "volatile"};
  return kBuiltin.count(word) || Specifiers().count(word) || StatementWords().count(word);
}

constexpr size_t kUnclosed = std::string::npos;

// Skips a balanced group that opens at tokens[p] ("(", "[" or "<"); angle
// brackets count only outside parentheses.  Returns the index after it, or
// kUnclosed when it does not close at or before `end`.
size_t SkipGroup(const std::vector<Token>& tokens, size_t p, size_t end) {
  const std::string open = tokens[p].text;
  int paren = 0, bracket = 0, angle = 0;
  for (; p <= end; ++p) {
    const Token& t = tokens[p];
    if (t.kind != Token::kPunct) continue;
    if (t.text == "(") ++paren;
    else if (t.text == ")") --paren;
    else if (t.text == "[") ++bracket;
    else if (t.text == "]") --bracket;
    else if (open == "<" && paren == 0 && t.text == "<") ++angle;
    else if (open == "<" && paren == 0 && t.text == ">") --angle;
    bool closed = open == "<" ? (angle == 0 && paren == 0) : open == "(" ? paren == 0 : bracket == 0;
    if (closed) return p + 1;
  }
  return kUnclosed;
}

struct PrefixFacts {
  bool declaration = false;
  bool global = false, device = false, launch_bounds = false, cluster_dims = false;
};

// Whether tokens[begin..end] (inclusive; begin > end: empty) are what may
// stand before a function's name in a declaration.
PrefixFacts AnalyzePrefix(const std::vector<Token>& tokens, size_t begin, size_t end) {
  PrefixFacts facts;
  if (begin > end) return facts;  // nothing before the name: a call statement
  // A macro invocation without a `;` before the template (FOO(x) template <...>)
  // ends at the first `template <` outside parentheses.
  {
    int paren = 0;
    for (size_t p = begin; p + 1 <= end; ++p) {
      if (IsPunct(tokens[p], "(")) ++paren;
      if (IsPunct(tokens[p], ")")) --paren;
      if (paren == 0 && IsIdent(tokens[p], "template") && IsPunct(tokens[p + 1], "<")) {
        if (p > begin && (IsPunct(tokens[p - 1], ".") || IsPunct(tokens[p - 1], "->") ||
                          IsPunct(tokens[p - 1], "::")))
          return facts;
        begin = p;
        break;
      }
    }
  }
  size_t p = begin;
  // An access label: `public: __device__ static void k(`.
  if (p + 1 <= end && tokens[p].kind == Token::kIdent &&
      (tokens[p].text == "public" || tokens[p].text == "private" || tokens[p].text == "protected") &&
      IsPunct(tokens[p + 1], ":"))
    p += 2;
  bool has_template = false, has_type = false;
  while (p <= end && IsIdent(tokens[p], "template")) {
    has_template = true;
    ++p;
    if (p <= end && IsPunct(tokens[p], "<")) {
      p = SkipGroup(tokens, p, end);
      if (p == kUnclosed) return facts;
    }
    // A requires-clause: skipped up to the first specifier or type word.
    if (p <= end && IsIdent(tokens[p], "requires")) {
      ++p;
      while (p <= end) {
        const Token& t = tokens[p];
        if (IsPunct(t, "(") || IsPunct(t, "<")) {
          p = SkipGroup(tokens, p, end);
          if (p == kUnclosed) return facts;
        } else if (t.kind == Token::kIdent && (Specifiers().count(t.text) || IsKeywordLike(t.text))) {
          break;
        } else {
          ++p;
        }
      }
    }
  }
  while (p <= end) {
    const Token& t = tokens[p];
    if (t.kind == Token::kIdent) {
      if (StatementWords().count(t.text)) return facts;
      if (AttributeWords().count(t.text) && p + 1 <= end && IsPunct(tokens[p + 1], "(")) {
        if (t.text == "__launch_bounds__") facts.launch_bounds = true;
        if (t.text == "__cluster_dims__") facts.cluster_dims = true;
        if (t.text == "decltype") has_type = true;
        p = SkipGroup(tokens, p + 1, end);
        if (p == kUnclosed) return facts;
        continue;
      }
      if (p + 1 <= end && IsPunct(tokens[p + 1], "(")) {
        // An attribute macro, not expanded (FOO_LAUNCH_BOUNDS(256)): neither
        // a type nor anything the facts can say.
        p = SkipGroup(tokens, p + 1, end);
        if (p == kUnclosed) return facts;
        continue;
      }
      if (t.text == "__global__") facts.global = true;
      if (t.text == "__device__") facts.device = true;
      if (!Specifiers().count(t.text)) has_type = true;
      ++p;
      continue;
    }
    if (IsPunct(t, "::") || IsPunct(t, "*") || IsPunct(t, "&")) {
      ++p;
      continue;
    }
    if (IsPunct(t, "<") && p > begin && tokens[p - 1].kind == Token::kIdent) {  // a template type
      p = SkipGroup(tokens, p, end);
      if (p == kUnclosed) return facts;
      continue;
    }
    if (IsPunct(t, "[") && p + 1 <= end && IsPunct(tokens[p + 1], "[")) {  // [[attribute]]
      p = SkipGroup(tokens, p, end);
      if (p == kUnclosed) return facts;
      continue;
    }
    return facts;  // = , ( ) . -> : ; numbers ...: an expression
  }
  facts.declaration = has_template || has_type;
  return facts;
}

struct EntryName {
  std::vector<std::string> qualifiers;
  std::string last;  // empty: not a valid name, nothing matches
};

// "a::b::c", "::c", " c " -> qualifiers and last component.
EntryName ParseEntryName(const std::string& entry) {
  EntryName name;
  std::string s = Trim(entry);
  if (StartsWith(s, "::")) s = s.substr(2);
  std::vector<std::string> parts;
  size_t at = 0;
  while (true) {
    size_t next = s.find("::", at);
    parts.push_back(Trim(std::string_view(s).substr(at, next == std::string::npos ? std::string::npos : next - at)));
    if (next == std::string::npos) break;
    at = next + 2;
  }
  for (const std::string& part : parts) {
    if (part.empty() || !IsIdentStart(part[0])) return name;
    for (char c : part)
      if (!IsIdentChar(c)) return name;
  }
  name.last = parts.back();
  parts.pop_back();
  name.qualifiers = std::move(parts);
  return name;
}

constexpr size_t kMaxFiles = 4000;

class Scanner {
 public:
  Scanner(const EntryName& entry, const std::vector<std::string>& include_dirs)
      : entry_(entry), include_dirs_(include_dirs) {}

  EntryScan Run(const std::string& source_path) {
    if (!entry_.last.empty()) ScanFile(source_path);
    if (!found_ && candidate_) {
      result_.file = candidate_file_;
      result_.line = candidate_line_;
      result_.column = candidate_column_;
    }
    return std::move(result_);
  }

 private:
  // One file being scanned: its tokens and where the scan is in them.
  struct Frame {
    std::string path;
    std::vector<Token> tokens;
    size_t next = 0;
  };

  // Depth-first over the #includes with a stack of its own (an include
  // chain may be thousands of files deep).
  void ScanFile(const std::string& source_path) {
    std::vector<Frame> stack;
    Open(source_path, stack);
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next >= frame.tokens.size()) {
        stack.pop_back();
        continue;
      }
      size_t i = frame.next++;
      const Token& t = frame.tokens[i];
      if (t.kind == Token::kDirective) {
        if (!t.include) continue;
        std::optional<std::string> included = Resolve(t.text, t.angled, frame.path);
        if (included) Open(*included, stack);  // invalidates `frame`
        continue;
      }
      if (t.kind == Token::kIdent && t.text == entry_.last && TryMatch(frame.tokens, i, frame.path)) return;
    }
  }

  // Pushes `path` unless it was read already, cannot be read, or the cap is
  // reached.
  void Open(const std::string& path, std::vector<Frame>& stack) {
    if (result_.files_read.size() >= kMaxFiles) return;
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
    std::string key = ec ? std::filesystem::path(path).lexically_normal().string() : canonical.string();
    if (!visited_.insert(key).second) return;
    std::optional<std::string> text = ReadFile(path);
    if (!text) return;
    result_.files_read.push_back(path);
    stack.push_back(Frame{path, Tokenize(BlankCommentsAndLiterals(*text), *text), 0});
  }

  std::optional<std::string> Resolve(const std::string& name, bool angled, const std::string& from) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!angled) {
      fs::path p = fs::path(from).parent_path() / name;
      if (fs::is_regular_file(p, ec)) return p.string();
    }
    for (const std::string& dir : include_dirs_) {
      fs::path p = fs::path(dir) / name;
      if (fs::is_regular_file(p, ec)) return p.string();
    }
    return std::nullopt;
  }

  // Whether tokens[at] (the entry's last name component) is the entry's
  // __global__/__device__ declaration; records a declaration without
  // either as the candidate.
  bool TryMatch(const std::vector<Token>& tokens, size_t at, const std::string& path) {
    if (at + 1 >= tokens.size() || !IsPunct(tokens[at + 1], "(")) return false;
    // The qualifier the declaration spells out, innermost last.
    std::vector<std::string> quals;
    bool anchored = false;
    size_t j = at;  // tokens before j precede the qualified name
    while (j >= 2 && IsPunct(tokens[j - 1], "::") && tokens[j - 2].kind == Token::kIdent &&
           !IsKeywordLike(tokens[j - 2].text)) {
      quals.insert(quals.begin(), tokens[j - 2].text);
      j -= 2;
    }
    if (j >= 1 && IsPunct(tokens[j - 1], "::")) {
      if (j >= 2 && (IsPunct(tokens[j - 2], ">") || tokens[j - 2].kind == Token::kNumber)) return false;
      anchored = true;  // `void ::k(`
      --j;
    }
    if (j >= 1 && (IsPunct(tokens[j - 1], ".") || IsPunct(tokens[j - 1], "->"))) return false;
    const std::vector<std::string>& want = entry_.qualifiers;
    if (anchored ? quals != want
                 : (quals.size() > want.size() || !std::equal(quals.begin(), quals.end(), want.end() - quals.size())))
      return false;
    // The prefix: back to `;`, `{`, `}` or a preprocessor line outside
    // parentheses; an unclosed `(` or `[` means the name is inside an
    // expression or a parameter list.
    size_t begin = j;
    int paren = 0, bracket = 0;
    for (size_t m = j; m-- > 0;) {
      const Token& t = tokens[m];
      if (t.kind == Token::kDirective) break;
      if (t.kind == Token::kPunct) {
        if (paren == 0 && bracket == 0 && (t.text == ";" || t.text == "{" || t.text == "}")) break;
        if (t.text == ")") ++paren;
        if (t.text == "]") ++bracket;
        if (t.text == "(" && paren-- == 0) return false;
        if (t.text == "[" && bracket-- == 0) return false;
      }
      begin = m;
    }
    PrefixFacts facts = j == 0 || begin >= j ? PrefixFacts{} : AnalyzePrefix(tokens, begin, j - 1);
    if (!facts.declaration) return false;
    if (!facts.global && !facts.device) {
      if (!candidate_) {
        candidate_ = true;
        candidate_file_ = path;
        candidate_line_ = tokens[at].line;
        candidate_column_ = tokens[at].column;
      }
      return false;
    }
    found_ = true;
    result_.form = facts.global ? EntryForm::kGlobal : EntryForm::kDevice;
    result_.file = path;
    result_.line = tokens[at].line;
    result_.column = tokens[at].column;
    result_.launch_bounds = facts.launch_bounds;
    result_.cluster_dims = facts.cluster_dims;
    return true;
  }

  const EntryName& entry_;
  const std::vector<std::string>& include_dirs_;
  EntryScan result_;
  std::set<std::string> visited_;
  bool found_ = false;
  bool candidate_ = false;
  std::string candidate_file_;
  int candidate_line_ = 0, candidate_column_ = 0;
};

}  // namespace

const char* EntryFormName(EntryForm form) {
  switch (form) {
    case EntryForm::kGlobal: return "__global__";
    case EntryForm::kDevice: return "__device__";
    case EntryForm::kUnknown: break;
  }
  return "unknown";
}

EntryScan ScanCudaEntry(const std::string& source_path, const std::string& entry,
                        const std::vector<std::string>& include_dirs) {
  EntryName name = ParseEntryName(entry);
  return Scanner(name, include_dirs).Run(source_path);
}

}  // namespace kpack
