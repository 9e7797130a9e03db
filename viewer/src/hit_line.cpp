// Hit-line parsing (see hit_line.h). Hand-written rather than a regex: it runs on every line
// of the input, a million lines in well under a second.
#include "hit_line.h"

namespace inprof::viewer {
namespace {

// Digits at line[*at]; advances past them. False without a digit or on overflow.
bool Number(std::string_view line, size_t* at, uint32_t* value) {
  uint64_t v = 0;
  size_t i = *at;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9' && i - *at < 10) {
    v = v * 10 + static_cast<uint64_t>(line[i] - '0');
    ++i;
  }
  if (i == *at || v > 0xffffffffu || (i < line.size() && line[i] >= '0' && line[i] <= '9')) {
    return false;
  }
  *value = static_cast<uint32_t>(v);
  *at = i;
  return true;
}

bool At(std::string_view line, size_t at, char c) { return at < line.size() && line[at] == c; }

// After "path:LINE" at `at`: an optional "-LAST", then ':' or the end. Fills the hit.
bool Location(std::string_view line, size_t at, HitLine* hit) {
  if (At(line, at, '-')) {
    size_t i = at + 1;
    if (!Number(line, &i, &hit->last) || !(At(line, i, ':') || i == line.size())) return false;
    at = i;
  }
  if (at == line.size()) {
    hit->text = at;
    return true;
  }
  if (!At(line, at, ':')) return false;
  hit->text = ++at;
  // An optional column, with an optional "-LAST:COL" end of a multi-line range.
  size_t i = at;
  uint32_t column = 0;
  if (!Number(line, &i, &column)) return true;
  if (At(line, i, ':')) {
    hit->column = column;
    hit->text = i + 1;
  } else if (At(line, i, '-')) {
    size_t j = i + 1;
    uint32_t last = 0, end_column = 0;
    if (Number(line, &j, &last) && At(line, j, ':') && (++j, Number(line, &j, &end_column)) &&
        (At(line, j, ':') || j == line.size()) && last >= hit->first) {
      hit->column = column;
      hit->last = last;
      hit->text = j < line.size() ? j + 1 : j;
    }
  } else if (i == line.size()) {
    hit->column = column;
    hit->text = i;
  }
  return true;
}

}  // namespace

bool ParseHitLine(std::string_view line, HitLine* hit) {
  for (size_t colon = line.find(':'); colon != std::string_view::npos;
       colon = line.find(':', colon + 1)) {
    if (colon == 0) continue;
    size_t at = colon + 1;
    HitLine h;
    if (!Number(line, &at, &h.first) || h.first == 0) continue;
    h.last = h.first;
    if (!Location(line, at, &h)) continue;
    if (h.last < h.first) continue;
    h.path = line.substr(0, colon);
    *hit = h;
    return true;
  }
  return false;
}

std::string StripColor(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\033' && i + 1 < line.size() && line[i + 1] == '[') {
      size_t j = i + 2;
      while (j < line.size() && ((line[j] >= '0' && line[j] <= '9') || line[j] == ';')) ++j;
      if (j < line.size() && (line[j] == 'm' || line[j] == 'K')) {
        i = j;
        continue;
      }
    }
    out += line[i];
  }
  return out;
}

}  // namespace inprof::viewer
