// Flame graph SVG writer: lays the merged tree out (x from sample counts, y from depth) and
// writes every box in one pass into one pre-reserved string.
//
// The document follows flamegraph.pl's layout and controls (so it looks and works as people
// expect: hover, click to zoom, Ctrl-F search, "Matched: N%", Reset Zoom), but the boxes also
// carry their exact position in samples (data-x, data-w) and depth (data-d): the script zooms
// and computes the matched share from integers, not from rounded pixel widths.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "flame_svg.h"
#include "inprof/flame.h"

namespace inprof {
namespace {

using internal::FlameSymbol;
using internal::FlameTree;

// Layout, as flamegraph.pl's defaults.
constexpr int kFrameHeight = 16;
constexpr int kFontSize = 12;
constexpr double kFontWidth = 0.59;  // average glyph width as a share of the font size
constexpr int kXPad = 10;
constexpr int kTitleY = kFontSize * 2;
constexpr int kSubtitleY = kFontSize * 4;
constexpr int kTopPad = kFontSize * 5;          // title and subtitle
constexpr int kBottomPad = kFontSize * 2 + 10;  // details line

void AppendInt(std::string& out, uint64_t value) {
  char buffer[24];
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, r.ptr);
}

// "1,234,567": counts in tooltips, as flamegraph.pl shows them.
void AppendGrouped(std::string& out, uint64_t value) {
  char buffer[24];
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, value);
  const size_t digits = static_cast<size_t>(r.ptr - buffer);
  for (size_t i = 0; i < digits; ++i) {
    if (i > 0 && (digits - i) % 3 == 0) out += ',';
    out += buffer[i];
  }
}

// Two decimals, rounded half away from zero, no locale: "12.50", "-0.25".
void AppendFixed2(std::string& out, double value) {
  const long long hundredths = std::llround(value * 100);
  const unsigned long long magnitude =
      hundredths < 0 ? 0ULL - static_cast<unsigned long long>(hundredths) : hundredths;
  if (hundredths < 0) out += '-';
  AppendInt(out, magnitude / 100);
  out += '.';
  out += static_cast<char>('0' + magnitude / 10 % 10);
  out += static_cast<char>('0' + magnitude % 10);
}

void AppendPercent(std::string& out, uint64_t part, uint64_t total) {
  if (part == total) {
    out += "100";  // not "100.00": the full box is easy to spot in a list of tooltips
  } else {
    AppendFixed2(out, 100.0 * static_cast<double>(part) / static_cast<double>(total));
  }
  out += '%';
}

// The label that fits in `width` pixels: the whole name, a prefix ending in "..", or nothing.
// The script redoes this on zoom with the same rule.
std::string_view FitLabel(std::string_view name, double width) {
  const double room = (width - 3) / (kFontSize * kFontWidth);
  if (room < 3) return {};
  const auto chars = static_cast<size_t>(room);
  if (name.size() <= chars) return name;
  size_t cut = chars - 2;
  // Never split a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return name.substr(0, cut);
}

// Pixels per sample.
double Scale(const FlameOptions& options, uint64_t total) {
  return total > 0 ? (options.width - 2.0 * kXPad) / static_cast<double>(total) : 0;
}

struct Colors {
  bool diff = false;
  double after_total = 0;
  double baseline_scale = 0;  // multiplies baseline self weights to the after total
  double max_delta = 0;
};

double Delta(const FlameTree::Node& node, const Colors& colors) {
  const double delta = static_cast<double>(node.self) -
                       static_cast<double>(node.baseline_self) * colors.baseline_scale;
  // Scaling by a ratio like 100/30 leaves rounding noise where nothing changed; noise must
  // not tint an unchanged box.
  return std::fabs(delta) <= 1e-9 * std::max(1.0, colors.after_total) ? 0 : delta;
}

// flamegraph.pl's color_scale(): white at no change, saturating to red (hotter) or blue.
void AppendDiffColor(std::string& out, double delta, double max_delta) {
  int r = 255, g = 255, b = 255;
  if (max_delta > 0 && delta > 0) {
    g = b = static_cast<int>(210 * (max_delta - delta) / max_delta);
  } else if (max_delta > 0 && delta < 0) {
    r = g = static_cast<int>(210 * (max_delta + delta) / max_delta);
  }
  out += "rgb(";
  AppendInt(out, r);
  out += ',';
  AppendInt(out, g);
  out += ',';
  AppendInt(out, b);
  out += ')';
}

// What the writer buffers before it hands the text to a stream.
constexpr size_t kStreamChunk = 256 << 10;

class SvgWriter {
 public:
  // With `sink`, `*out` is a buffer that goes to `sink` every kStreamChunk bytes and at the
  // end; without, it receives the whole document.
  SvgWriter(const FlameTree& tree, const FlameOptions& options, const Colors& colors,
            std::string* out, std::ostream* sink = nullptr)
      : tree_(tree), options_(options), colors_(colors), out_(*out), sink_(sink) {}

  void Write(std::string_view title, std::string_view subtitle) {
    const auto& nodes = tree_.nodes();
    const uint64_t total = nodes[0].total;
    scale_ = Scale(options_, total);
    // A box is drawn when it is at least min_width wide. Children are never wider than their
    // parent, so every drawn box has its ancestors drawn too, and one scan finds the depth.
    uint32_t max_depth = 0;
    for (const auto& node : nodes) {
      if (!Drawn(node)) continue;
      if (node.depth > max_depth) max_depth = node.depth;
    }
    height_ = kTopPad + kBottomPad + static_cast<int>(max_depth + 1) * kFrameHeight;

    size_t reserve = 8192 + std::char_traits<char>::length(internal::kFlameSvgScript);
    if (sink_ != nullptr) {
      reserve += kStreamChunk;
    } else {
      for (const auto& node : nodes) {
        if (Drawn(node)) reserve += 230 + 2 * tree_.symbol(node.symbol).escaped.size();
      }
    }
    out_.clear();
    out_.reserve(reserve);
    WriteHeader(title, subtitle);
    out_ += "<g id=\"frames\">\n";
    if (total > 0) WriteFrames();
    out_ += "</g>\n</svg>\n";
    if (sink_ != nullptr) Flush();
  }

 private:
  void Flush() {
    sink_->write(out_.data(), static_cast<std::streamsize>(out_.size()));
    out_.clear();
  }

  bool Drawn(const FlameTree::Node& node) const {
    return internal::FlameBoxDrawn(node.total, scale_, options_.min_width);
  }

  double Y(uint32_t depth) const {
    if (options_.inverted) return kTopPad + static_cast<double>(depth) * kFrameHeight;
    return height_ - kBottomPad - static_cast<double>(depth + 1) * kFrameHeight;
  }

  void Text(std::string_view id, double x, double y, std::string_view text,
            std::string_view cls = {}) {
    out_ += "<text id=\"";
    out_ += id;
    out_ += '"';
    if (!cls.empty()) {
      out_ += " class=\"";
      out_ += cls;
      out_ += '"';
    }
    out_ += " x=\"";
    AppendFixed2(out_, x);
    out_ += "\" y=\"";
    AppendInt(out_, static_cast<uint64_t>(y));
    out_ += "\">";
    out_ += text;
    out_ += "</text>\n";
  }

  void WriteHeader(std::string_view title, std::string_view subtitle) {
    const uint32_t width = options_.width;
    out_ += "<?xml version=\"1.0\" standalone=\"no\"?>\n";
    out_ += "<svg version=\"1.1\" width=\"";
    AppendInt(out_, width);
    out_ += "\" height=\"";
    AppendInt(out_, static_cast<uint64_t>(height_));
    out_ += "\" viewBox=\"0 0 ";
    AppendInt(out_, width);
    out_ += ' ';
    AppendInt(out_, static_cast<uint64_t>(height_));
    out_ +=
        "\" onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\" "
        "data-xpad=\"";
    AppendInt(out_, kXPad);
    out_ += "\" data-fontsize=\"";
    AppendInt(out_, kFontSize);
    out_ += "\" data-fontwidth=\"0.59\">\n";
    out_ +=
        "<!-- Flame graph written by inprof. Each box is a function in a stack; its width is "
        "its share of the samples. Click to zoom, Ctrl-F to search. -->\n";
    out_ +=
        "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
        "<stop stop-color=\"";
    out_ += "#eeeeee";
    out_ += "\" offset=\"5%\"/><stop stop-color=\"";
    out_ += colors_.diff ? "#e0e0ff" : "#eeeeb0";
    out_ += "\" offset=\"95%\"/></linearGradient></defs>\n";
    out_ += "<style type=\"text/css\">\n";
    out_ += internal::kFlameSvgStyle;
    out_ += "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n";
    out_ += internal::kFlameSvgScript;
    out_ += "]]></script>\n";
    out_ += "<rect x=\"0\" y=\"0\" width=\"";
    AppendInt(out_, width);
    out_ += "\" height=\"";
    AppendInt(out_, static_cast<uint64_t>(height_));
    out_ += "\" fill=\"url(#background)\"/>\n";
    const double middle = width / 2.0;
    Text("title", middle, kTitleY, title);
    Text("subtitle", middle, kSubtitleY, subtitle);
    const double bottom = height_ - 17;
    Text("details", kXPad, bottom, " ");
    Text("unzoom", kXPad, kTitleY, "Reset Zoom", "hide");
    Text("search", width - kXPad - 100, kTitleY, "Search");
    Text("ignorecase", width - kXPad - 6, kTitleY, "ic");
    Text("matched", width - kXPad - 100, bottom, " ", "hide");
    if (tree_.nodes()[0].total == 0) Text("empty", middle, kTopPad + kFrameHeight, "No samples");
  }

  void WriteFrame(uint32_t index, uint64_t x) {
    const FlameTree::Node& node = tree_.nodes()[index];
    const FlameSymbol& symbol = tree_.symbol(node.symbol);
    const uint64_t total = tree_.nodes()[0].total;
    const double px = kXPad + static_cast<double>(x) * scale_;
    const double pw = static_cast<double>(node.total) * scale_;
    const double y = Y(node.depth);

    out_ += "<g data-x=\"";
    AppendInt(out_, x);
    out_ += "\" data-w=\"";
    AppendInt(out_, node.total);
    out_ += "\" data-d=\"";
    AppendInt(out_, node.depth);
    out_ += "\"><title>";
    out_ += symbol.escaped;
    out_ += " (";
    if (symbol.kind == FrameKind::kInlined) out_ += "inlined, ";
    AppendGrouped(out_, node.total);
    out_ += ' ';
    out_ += escaped_count_name_;
    out_ += ", ";
    AppendPercent(out_, node.total, total);
    if (colors_.diff) {
      const double delta = Delta(node, colors_);
      out_ += "; ";
      const double share = 100.0 * delta / colors_.after_total;
      if (std::llround(share * 100) > 0) out_ += '+';
      AppendFixed2(out_, share);
      out_ += '%';
    }
    out_ += ")</title><rect x=\"";
    AppendFixed2(out_, px);
    out_ += "\" y=\"";
    AppendFixed2(out_, y);
    out_ += "\" width=\"";
    AppendFixed2(out_, pw);
    out_ += "\" height=\"";
    AppendInt(out_, kFrameHeight - 1);
    out_ += "\" fill=\"";
    if (colors_.diff) {
      AppendDiffColor(out_, Delta(node, colors_), colors_.max_delta);
    } else {
      internal::AppendFlameColor(out_, symbol);
    }
    out_ += "\" rx=\"2\" ry=\"2\"/><text x=\"";
    AppendFixed2(out_, px + 3);
    out_ += "\" y=\"";
    AppendFixed2(out_, y + 10.5);
    out_ += "\">";
    const std::string_view label = FitLabel(symbol.name, pw);
    if (label.size() == symbol.name.size()) {
      out_ += symbol.escaped;
    } else if (!label.empty()) {
      internal::AppendXmlEscaped(out_, label);
      out_ += "..";
    }
    out_ += "</text></g>\n";
  }

  // Preorder, children in name order: the root is the first box, and equal trees give equal
  // documents.
  void WriteFrames() {
    internal::AppendXmlEscaped(escaped_count_name_, internal::CleanXmlText(options_.count_name));
    const auto& nodes = tree_.nodes();
    const auto& children = tree_.children();
    std::vector<uint32_t> stack;
    stack.push_back(0);
    while (!stack.empty()) {
      const uint32_t index = stack.back();
      stack.pop_back();
      const FlameTree::Node& node = nodes[index];
      if (!Drawn(node)) continue;
      WriteFrame(index, node.x);
      if (sink_ != nullptr && out_.size() >= kStreamChunk) Flush();
      for (uint32_t i = node.child_count; i-- > 0;) stack.push_back(children[node.first_child + i]);
    }
  }

  const FlameTree& tree_;
  const FlameOptions& options_;
  const Colors& colors_;
  std::string& out_;
  std::ostream* sink_;
  std::string escaped_count_name_;
  double scale_ = 0;
  int height_ = 0;
};

Status CheckOptions(const FlameOptions& options) {
  if (options.width < 100 || options.width > 100000) {
    return Status::Error("the width must be 100 to 100000 pixels, not " +
                         std::to_string(options.width));
  }
  if (!std::isfinite(options.min_width) || options.min_width < 0 ||
      options.min_width > options.width) {
    return Status::Error("the minimum box width must be 0 to the image width in pixels");
  }
  return Status::Ok();
}

Status CheckEvent(const Profile& profile, size_t event) {
  if (profile.events.empty() || event < profile.events.size()) return Status::Ok();
  return Status::Error("event #" + std::to_string(event) + " does not exist (the profile has " +
                       std::to_string(profile.events.size()) + " events)");
}

std::string EventName(const Profile& profile, size_t event) {
  return event < profile.events.size() ? profile.events[event].name : std::string();
}

// "program - event - 1,234 samples", from what the profile knows.
std::string DefaultSubtitle(const Profile& profile, const FlameOptions& options, uint64_t total) {
  std::string subtitle;
  const std::string& program = profile.meta.program;
  if (!program.empty()) subtitle = program.substr(program.rfind('/') + 1) + " - ";
  // Folded stacks and perf.log call their one event "samples": no need to say it twice.
  const std::string event = EventName(profile, options.event);
  if (!event.empty() && event != options.count_name) subtitle += event + " - ";
  AppendGrouped(subtitle, total);
  subtitle += ' ';
  subtitle += options.count_name;
  return subtitle;
}

std::string Escaped(std::string_view text) {
  std::string out;
  internal::AppendXmlEscaped(out, internal::CleanXmlText(text));
  return out;
}

}  // namespace

namespace internal {

void AppendFlameColor(std::string& out, const FlameSymbol& symbol) {
  // FNV-1a: stable across runs, platforms and compilers (std::hash is none of these), so a
  // function keeps its colour from one graph to the next.
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : symbol.name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  const double v1 = static_cast<double>(hash & 0xffff) / 0xffff;
  const double v2 = static_cast<double>((hash >> 16) & 0xffff) / 0xffff;
  const double v3 = static_cast<double>((hash >> 32) & 0xffff) / 0xffff;
  int r, g, b;
  switch (symbol.kind) {
    case FrameKind::kInlined:  // flamegraph.pl's aqua, its colour for "_[i]"
      r = 50 + static_cast<int>(60 * v1);
      g = 165 + static_cast<int>(55 * v1);
      b = 165 + static_cast<int>(55 * v1);
      break;
    case FrameKind::kSynthetic:  // the profiler's own frames: neutral grey
      r = g = b = 160 + static_cast<int>(40 * v1);
      break;
    default:  // flamegraph.pl's "hot" palette
      r = 205 + static_cast<int>(50 * v3);
      g = static_cast<int>(230 * v1);
      b = static_cast<int>(55 * v2);
      break;
  }
  out += "rgb(";
  AppendInt(out, r);
  out += ',';
  AppendInt(out, g);
  out += ',';
  AppendInt(out, b);
  out += ')';
}

}  // namespace internal

namespace {

// WriteFlameSvg into `*out`, or through it to `sink`.
Status DrawFlameSvg(const Profile& profile, const FlameOptions& options, std::string* out,
                    std::ostream* sink) {
  if (Status s = CheckOptions(options); !s.ok()) return s;
  if (Status s = CheckEvent(profile, options.event); !s.ok()) return s;
  FlameTree tree;
  tree.AddProfile(profile, options.event, false, options.lines);
  tree.Finish(/*drawn_only=*/true, Scale(options, tree.total()), options.min_width);
  const uint64_t total = tree.nodes()[0].total;
  const std::string title = Escaped(!options.title.empty() ? options.title
                                    : options.inverted     ? "Icicle Graph"
                                                           : "Flame Graph");
  const std::string subtitle = Escaped(
      !options.subtitle.empty() ? options.subtitle : DefaultSubtitle(profile, options, total));
  Colors colors;
  SvgWriter(tree, options, colors, out, sink).Write(title, subtitle);
  return Status::Ok();
}

}  // namespace

Status WriteFlameSvg(const Profile& profile, const FlameOptions& options, std::string* out) {
  return DrawFlameSvg(profile, options, out, nullptr);
}

Status WriteFlameSvg(const Profile& profile, const FlameOptions& options, std::ostream& out) {
  std::string buffer;
  return DrawFlameSvg(profile, options, &buffer, &out);
}

Status WriteDiffFlameSvg(const Profile& before, const Profile& after, const FlameOptions& options,
                         std::string* out) {
  if (Status s = CheckOptions(options); !s.ok()) return s;
  if (Status s = CheckEvent(after, options.event); !s.ok()) return s;
  const size_t before_event = options.before_event.value_or(options.event);
  if (Status s = CheckEvent(before, before_event); !s.ok()) {
    return Status::Error("the profile before: " + s.message());
  }
  FlameTree tree;
  tree.AddProfile(after, options.event, false, options.lines);
  tree.AddProfile(before, before_event, true, options.lines);
  tree.Finish();
  Colors colors;
  colors.diff = true;
  const uint64_t total = tree.nodes()[0].total;
  colors.after_total = static_cast<double>(total);
  // Normalised as difffolded.pl -n does: a longer or faster-sampled "before" run must not
  // make everything look colder.
  if (tree.baseline_total() > 0) {
    colors.baseline_scale = colors.after_total / static_cast<double>(tree.baseline_total());
  }
  for (const auto& node : tree.nodes()) {
    colors.max_delta = std::max(colors.max_delta, std::fabs(Delta(node, colors)));
  }
  const std::string title =
      Escaped(!options.title.empty() ? options.title : "Differential Flame Graph");
  std::string subtitle = options.subtitle;
  if (subtitle.empty()) {
    subtitle = DefaultSubtitle(after, options, total) + " (red: hotter, blue: colder than ";
    AppendGrouped(subtitle, tree.baseline_total());
    subtitle += " before, scaled)";
  }
  SvgWriter(tree, options, colors, out).Write(title, Escaped(subtitle));
  return Status::Ok();
}

std::string FlameCleanText(std::string_view text) { return internal::CleanXmlText(text); }

std::string FlameBoxName(std::string_view name) { return internal::CleanFlameName(name); }

std::string FlameEscapeXml(std::string_view text) {
  std::string out;
  internal::AppendXmlEscaped(out, internal::CleanXmlText(text));
  return out;
}

std::string FlameBoxFill(std::string_view name, FrameKind kind) {
  internal::FlameSymbol symbol;
  symbol.name = std::string(name);
  symbol.kind = kind;
  std::string out;
  internal::AppendFlameColor(out, symbol);
  return out;
}

}  // namespace inprof
