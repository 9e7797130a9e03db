// Test helpers for flame graph SVGs: a strict well-formedness check (an SVG that is not
// well-formed XML shows nothing but an error in a browser) and the boxes read back.
#ifndef INPROF_TESTS_EXPORTERS_FLAME_XML_H_
#define INPROF_TESTS_EXPORTERS_FLAME_XML_H_

#include <cstdint>
#include <string>
#include <vector>

namespace inprof::test {

// Empty when `xml` is a well-formed XML document (one root element, properly nested and
// closed tags, quoted attributes without duplicates, only the five predefined or numeric
// character references, closed comments and CDATA sections, valid UTF-8 without control
// characters); otherwise what is wrong and at which byte offset.
std::string XmlWellFormedError(const std::string& xml);

// One box of a flame graph as written: the <g> in #frames with its title and rect.
struct FlameBox {
  std::string title;                 // unescaped: "name (N samples, P%)"
  std::string name;                  // the title without its trailing "(...)"
  std::string label;                 // the text drawn in the box, unescaped
  uint64_t x = 0, w = 0, depth = 0;  // data-x, data-w, data-d
  double rect_x = 0, rect_y = 0, rect_width = 0;
  std::string fill;
};
std::vector<FlameBox> FlameBoxes(const std::string& svg);

}  // namespace inprof::test

#endif  // INPROF_TESTS_EXPORTERS_FLAME_XML_H_
