// Shortening of C++ function names (names.h). A single left-to-right pass over the demangled
// text that copies what sits outside template argument lists and parameter lists; the few
// places where '<', '(' or ' ' do not open such a list (operator names, "(anonymous
// namespace)", names that are not C++ at all) are recognised first.
#include "names.h"

#include <cstddef>
#include <vector>

namespace inprof::viewer {
namespace {

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}

bool IsOperatorChar(char c) {
  switch (c) {
    case '<':
    case '>':
    case '=':
    case '!':
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
    case '^':
    case '&':
    case '|':
    case '~':
    case ',':
      return true;
    default:
      return false;
  }
}

// The index just past the list opened at `at` (a '<' or '('), counting both kinds of bracket
// so that "(3>2)" inside a template argument does not close it; npos when unbalanced.
size_t SkipBalanced(std::string_view s, size_t at) {
  int angle = 0, paren = 0;
  for (size_t i = at; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(') ++paren;
    if (c == ')') --paren;
    if (paren == 0 && c == '<') ++angle;
    if (paren == 0 && c == '>') --angle;
    if (paren < 0 || angle < 0) return std::string_view::npos;
    if (paren == 0 && angle == 0) return i + 1;
  }
  return std::string_view::npos;
}

bool EndsWithWord(const std::string& s, std::string_view word) {
  if (s.size() < word.size() || s.compare(s.size() - word.size(), word.size(), word) != 0) {
    return false;
  }
  return s.size() == word.size() || !IsIdentifierChar(s[s.size() - word.size() - 1]);
}

}  // namespace

// One piece on purpose: a single left-to-right scan whose few flags (after an operator, inside
// "operator unsigned long", a parameter list seen) carry over from one character to the next;
// split into helpers, every helper would take and return all of them.
std::string ShortFunctionName(std::string_view name) {
  constexpr std::string_view kOperator = "operator";
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  constexpr std::string_view kLambda = "(lambda at ";
  std::string out;
  std::vector<size_t> splits;  // positions in `out` just after a space between words
  bool had_parameters = false;
  bool after_operator = false;  // just copied an operator's name or a list: a list may follow
  std::string clones;           // " [clone .cold]": kept, after the shortened name
  bool operator_words = false;  // inside "operator unsigned long": spaces are not splits
  for (size_t i = 0; i < name.size();) {
    const char c = name[i];
    const bool after_name =
        after_operator || (!out.empty() && (IsIdentifierChar(out.back()) || out.back() == '}' ||
                                            out.back() == ']' || out.back() == ')'));
    after_operator = false;
    if (name.substr(i).starts_with(kOperator) && !(i > 0 && IsIdentifierChar(name[i - 1])) &&
        !(i + kOperator.size() < name.size() && IsIdentifierChar(name[i + kOperator.size()]))) {
      // An operator's own symbol is part of its name: operator<, operator<<=, operator(),
      // operator[], operator->*. "operator new" and conversions continue as words.
      out += kOperator;
      i += kOperator.size();
      if (name.substr(i).starts_with("()") || name.substr(i).starts_with("[]")) {
        out += name.substr(i, 2);
        i += 2;
      } else {
        while (i < name.size() && IsOperatorChar(name[i])) out += name[i++];
      }
      if (i < name.size() && name[i] == ' ' && i + 1 < name.size() &&
          IsIdentifierChar(name[i + 1])) {
        out += name[i++];  // "operator new", "operator unsigned long": not a return type split
        operator_words = true;
      }
      while (i < name.size() && name[i] == ' ') ++i;  // "operator< <int>(...)"
      after_operator = true;
      continue;
    }
    if (c == '(' && name.substr(i).starts_with(kAnonymous)) {
      out += kAnonymous;
      i += kAnonymous.size();
      continue;
    }
    if (c == '(' && name.substr(i).starts_with(kLambda)) {
      // clang's "(lambda at /src/main.cpp:55:12)": a name of its own, spaces and all.
      const size_t end = name.find(')', i);
      if (end == std::string_view::npos) return std::string(name);
      out += name.substr(i, end + 1 - i);
      i = end + 1;
      continue;
    }
    if ((c == '<' || c == '(') && after_name) {
      const size_t end = SkipBalanced(name, i);
      if (end == std::string_view::npos) return std::string(name);  // not a name we understand
      had_parameters = had_parameters || c == '(';
      operator_words = operator_words && c != '(';
      after_operator = c == '<';  // "f<int>(...)", "operator< <int>(...)"
      i = end;
      continue;
    }
    if (c == '[' &&
        (name.substr(i).starts_with("[abi:") || name.substr(i).starts_with("[clone "))) {
      const size_t end = name.find(']', i);
      if (end == std::string_view::npos) return std::string(name);
      if (name[i + 1] == 'c') clones += " " + std::string(name.substr(i, end + 1 - i));
      i = end + 1;
      continue;
    }
    if (c == '(' || c == '<' || c == '[') {
      // Not a list after a name ("(main chunk)", "[unknown]"): the name is not a C++
      // signature, so it is shown as it is.
      return std::string(name);
    }
    if (c == ' ') {
      if (!out.empty() && out.back() != ' ') {
        out += ' ';
        if (!operator_words) splits.push_back(out.size());
      }
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  if (!had_parameters) return std::string(name);
  // Trailing qualifiers of a member function, then the return type in front of the name.
  for (bool trimmed = true; trimmed;) {
    trimmed = false;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    for (std::string_view q : {"const", "volatile", "noexcept", "&&", "&"}) {
      const bool word = IsIdentifierChar(q.front());
      if ((word && EndsWithWord(out, q)) || (!word && out.ends_with(q) && out.size() > q.size() &&
                                             out[out.size() - q.size() - 1] == ' ')) {
        out.resize(out.size() - q.size());
        trimmed = true;
      }
    }
  }
  size_t start = 0;
  for (size_t split : splits) {
    if (split < out.size()) start = split;
  }
  std::string shortened = out.substr(start);
  return shortened.empty() ? std::string(name) : shortened + clones;
}

}  // namespace inprof::viewer
