#include "flame_xml.h"

#include <cstdlib>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace inprof::test {
namespace {

bool NameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool NameChar(char c) { return NameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

class Checker {
 public:
  explicit Checker(const std::string& xml) : s_(xml) {}

  std::string Run() {
    if (std::string e = CheckCharacters(); !e.empty()) return e;
    if (s_.compare(0, 5, "<?xml") == 0) {
      const size_t end = s_.find("?>");
      if (end == std::string::npos) return Fail("unterminated XML declaration");
      i_ = end + 2;
    }
    bool root_seen = false;
    std::vector<std::string> open;
    while (i_ < s_.size()) {
      if (s_[i_] != '<') {
        const size_t next = s_.find('<', i_);
        const std::string text =
            s_.substr(i_, next == std::string::npos ? std::string::npos : next - i_);
        if (open.empty() && text.find_first_not_of(" \t\r\n") != std::string::npos) {
          return Fail("text outside the root element");
        }
        if (std::string e = CheckText(text, '<'); !e.empty()) return e;
        i_ = next == std::string::npos ? s_.size() : next;
        continue;
      }
      if (s_.compare(i_, 4, "<!--") == 0) {
        const size_t end = s_.find("-->", i_ + 4);
        if (end == std::string::npos) return Fail("unterminated comment");
        if (s_.substr(i_ + 4, end - i_ - 4).find("--") != std::string::npos) {
          return Fail("'--' inside a comment");
        }
        i_ = end + 3;
      } else if (s_.compare(i_, 9, "<![CDATA[") == 0) {
        if (open.empty()) return Fail("CDATA outside the root element");
        const size_t end = s_.find("]]>", i_ + 9);
        if (end == std::string::npos) return Fail("unterminated CDATA section");
        i_ = end + 3;
      } else if (s_.compare(i_, 2, "<?") == 0) {
        const size_t end = s_.find("?>", i_);
        if (end == std::string::npos) return Fail("unterminated processing instruction");
        i_ = end + 2;
      } else if (s_.compare(i_, 2, "</") == 0) {
        i_ += 2;
        const std::string name = Name();
        if (name.empty()) return Fail("expected a name in a closing tag");
        SkipSpace();
        if (i_ >= s_.size() || s_[i_] != '>') return Fail("expected '>'");
        ++i_;
        if (open.empty() || open.back() != name) return Fail("mismatched </" + name + ">");
        open.pop_back();
      } else {
        ++i_;
        const std::string name = Name();
        if (name.empty()) return Fail("expected an element name after '<'");
        if (open.empty()) {
          if (root_seen) return Fail("a second root element");
          root_seen = true;
        }
        std::set<std::string> attributes;
        while (true) {
          const size_t before = i_;
          SkipSpace();
          if (i_ >= s_.size()) return Fail("unterminated tag <" + name);
          if (s_[i_] == '>') {
            ++i_;
            open.push_back(name);
            break;
          }
          if (s_.compare(i_, 2, "/>") == 0) {
            i_ += 2;
            break;
          }
          if (i_ == before) return Fail("expected a space before an attribute");
          const std::string attribute = Name();
          if (attribute.empty()) return Fail("expected an attribute name in <" + name);
          if (!attributes.insert(attribute).second) return Fail("duplicate " + attribute);
          SkipSpace();
          if (i_ >= s_.size() || s_[i_] != '=') return Fail("expected '=' after " + attribute);
          ++i_;
          SkipSpace();
          if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) {
            return Fail("unquoted value of " + attribute);
          }
          const char quote = s_[i_++];
          const size_t end = s_.find(quote, i_);
          if (end == std::string::npos) return Fail("unterminated value of " + attribute);
          if (std::string e = CheckText(s_.substr(i_, end - i_), '<'); !e.empty()) return e;
          i_ = end + 1;
        }
      }
    }
    if (!root_seen) return Fail("no root element");
    if (!open.empty()) return Fail("<" + open.back() + "> is never closed");
    return {};
  }

 private:
  std::string Fail(const std::string& what) const {
    return what + " at byte " + std::to_string(i_);
  }

  std::string Name() {
    const size_t start = i_;
    if (i_ < s_.size() && NameStart(s_[i_])) {
      ++i_;
      while (i_ < s_.size() && NameChar(s_[i_])) ++i_;
    }
    return s_.substr(start, i_ - start);
  }

  void SkipSpace() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) {
      ++i_;
    }
  }

  // Text and attribute values: no '<', and every '&' starts a known reference.
  std::string CheckText(const std::string& text, char forbidden) const {
    for (size_t k = 0; k < text.size(); ++k) {
      if (text[k] == forbidden) return Fail("raw '<' in text or attribute");
      if (text[k] != '&') continue;
      const size_t semi = text.find(';', k);
      if (semi == std::string::npos) return Fail("'&' without ';'");
      const std::string ref = text.substr(k + 1, semi - k - 1);
      static const std::regex known("amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+");
      if (!std::regex_match(ref, known)) return Fail("unknown entity &" + ref + ";");
      k = semi;
    }
    return {};
  }

  std::string CheckCharacters() const {
    for (size_t k = 0; k < s_.size();) {
      const auto c = static_cast<unsigned char>(s_[k]);
      if (c < 0x80) {
        if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f) {
          return "control character " + std::to_string(c) + " at byte " + std::to_string(k);
        }
        ++k;
        continue;
      }
      size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
      if (c > 0xF4 || length == 0 || k + length > s_.size()) {
        return "invalid UTF-8 at byte " + std::to_string(k);
      }
      for (size_t j = 1; j < length; ++j) {
        if ((static_cast<unsigned char>(s_[k + j]) & 0xC0) != 0x80) {
          return "invalid UTF-8 at byte " + std::to_string(k);
        }
      }
      k += length;
    }
    return {};
  }

  const std::string& s_;
  size_t i_ = 0;
};

std::string Unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    const size_t semi = text.find(';', i);
    const std::string ref = text.substr(i + 1, semi - i - 1);
    out += ref == "amp" ? "&" : ref == "lt" ? "<" : ref == "gt" ? ">" : ref == "quot" ? "\"" : "'";
    i = semi;
  }
  return out;
}

std::string Attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return {};
  const size_t start = at + key.size();
  return tag.substr(start, tag.find('"', start) - start);
}

}  // namespace

std::string XmlWellFormedError(const std::string& xml) { return Checker(xml).Run(); }

std::vector<FlameBox> FlameBoxes(const std::string& svg) {
  std::vector<FlameBox> boxes;
  size_t at = svg.find("<g id=\"frames\">");
  if (at == std::string::npos) return boxes;
  const size_t end = svg.find("\n</g>\n</svg>", at);
  while ((at = svg.find("<g data-x=", at)) != std::string::npos && at < end) {
    const size_t close = svg.find("</g>", at);
    const std::string g = svg.substr(at, close - at);
    at = close;
    FlameBox box;
    const std::string head = g.substr(0, g.find('>'));
    box.x = std::strtoull(Attribute(head, "data-x").c_str(), nullptr, 10);
    box.w = std::strtoull(Attribute(head, "data-w").c_str(), nullptr, 10);
    box.depth = std::strtoull(Attribute(head, "data-d").c_str(), nullptr, 10);
    const size_t title = g.find("<title>") + 7;
    box.title = Unescape(g.substr(title, g.find("</title>") - title));
    static const std::regex name_re(R"(^([\s\S]*) \([^()]*\)$)");
    std::smatch m;
    box.name = std::regex_match(box.title, m, name_re) ? m[1].str() : box.title;
    const std::string rect = g.substr(g.find("<rect"), g.find("/>", g.find("<rect")));
    box.rect_x = std::strtod(Attribute(rect, "x").c_str(), nullptr);
    box.rect_y = std::strtod(Attribute(rect, "y").c_str(), nullptr);
    box.rect_width = std::strtod(Attribute(rect, "width").c_str(), nullptr);
    box.fill = Attribute(rect, "fill");
    const size_t text = g.find('>', g.find("<text")) + 1;
    box.label = Unescape(g.substr(text, g.find("</text>") - text));
    boxes.push_back(std::move(box));
  }
  return boxes;
}

}  // namespace inprof::test
