// Command-line parsing shared by the viewer's commands (cli.h).
#include "cli.h"

#include <cstdlib>
#include <iostream>
#include <utility>

namespace inprof::viewer {

OptionSpec Flag(std::vector<std::string> names, bool* target) {
  return {std::move(names), nullptr, [target](const std::string&) {
            *target = true;
            return true;
          }};
}

OptionSpec Text(std::vector<std::string> names, const char* value, std::string* target) {
  return {std::move(names), value, [target](const std::string& text) {
            if (text.empty()) return false;
            *target = text;
            return true;
          }};
}

OptionSpec Count(std::vector<std::string> names, const char* value, size_t* target, size_t min,
                 size_t max) {
  return {std::move(names), value, [target, min, max](const std::string& text) {
            size_t n = 0;
            if (!ParseCount(text, &n) || n < min || n > max) return false;
            *target = n;
            return true;
          }};
}

Status ParseOptions(std::string_view command, const std::vector<std::string>& args, size_t first,
                    const std::vector<OptionSpec>& specs, std::vector<std::string>* positional,
                    bool* help) {
  bool options_done = false;
  for (size_t i = first; i < args.size(); ++i) {
    std::string arg = args[i];
    if (options_done || arg == "-" || !arg.starts_with("-")) {
      positional->push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return Status::Ok();
    }
    std::string value;
    bool inline_value = false;
    if (arg.starts_with("--") && arg.find('=') != std::string::npos) {
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      inline_value = true;
    }
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      for (const std::string& name : s.names) {
        if (name == arg) spec = &s;
      }
    }
    if (!spec) {
      return Status::InvalidArgument("unknown option '" + arg + "' for " + std::string(command));
    }
    if (spec->optional_value && !inline_value) {
      spec->set("");
      continue;
    }
    if (!spec->value) {
      if (inline_value) {
        return Status::InvalidArgument(arg + " takes no value");
      }
      spec->set("");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        return Status::InvalidArgument(arg + " needs " + spec->value);
      }
      value = args[++i];
    }
    if (!spec->set(value)) {
      return Status::InvalidArgument(arg + " needs " + spec->value +
                                     (value.empty() ? "" : ", not '" + value + "'"));
    }
  }
  return Status::Ok();
}

int UsageError(std::string_view command, const std::string& message) {
  std::cerr << "inprof: " << message << "\n(run `inprof " << command << (command.empty() ? "" : " ")
            << "--help` for usage)\n";
  return kExitUsage;
}

bool ParseCount(std::string_view text, size_t* value) {
  if (text.empty() || text.size() > 9) return false;
  size_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  *value = v;
  return true;
}

bool ParseDecimal(std::string_view text, double* value) {
  const std::string copy(text);
  char* end = nullptr;
  *value = std::strtod(copy.c_str(), &end);
  return !copy.empty() && *end == '\0';
}

bool ParseTime(std::string_view text, int64_t* ns) {
  // The unit sets how many of the number's decimals are whole nanoseconds.
  int decimals = 9;
  for (const auto& [suffix, places] :
       {std::pair<std::string_view, int>{"ms", 6}, {"us", 3}, {"ns", 0}, {"s", 9}}) {
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      text.remove_suffix(suffix.size());
      decimals = places;
      break;
    }
  }
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (whole.empty() && fraction.empty()) return false;
  if (dot != std::string_view::npos && fraction.empty()) return false;
  // 18 digits of whole units fit in 64 bits times any unit's 10^decimals below the cap.
  if (whole.size() > 18 || whole.size() + static_cast<size_t>(decimals) > 18) return false;
  int64_t value = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  for (int i = 0; i < decimals; ++i) value *= 10;
  int64_t place = 1;
  for (int i = 0; i < decimals; ++i) place *= 10;
  for (char c : fraction) {
    if (c < '0' || c > '9') return false;
    place /= 10;
    value += (c - '0') * place;
  }
  if (value > int64_t{999999999} * 1000000000) return false;
  *ns = value;
  return true;
}

std::string FormatSeconds(int64_t ns) {
  std::string text = std::to_string(ns / 1000000000);
  int64_t fraction = ns % 1000000000;
  if (fraction == 0) return text;
  std::string digits = std::to_string(fraction);
  digits.insert(0, 9 - digits.size(), '0');
  digits.erase(digits.find_last_not_of('0') + 1);
  return text + "." + digits;
}

bool ParseSourceRange(std::string_view text, SourceRange* range) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || text[colon - 1] == ':') return false;
  const std::string_view lines = text.substr(colon + 1);
  const size_t dash = lines.find('-');
  size_t first = 0, last = 0;
  if (!ParseCount(lines.substr(0, dash), &first)) return false;
  last = first;
  if (dash != std::string_view::npos && !ParseCount(lines.substr(dash + 1), &last)) return false;
  if (first == 0 || last < first || last > UINT32_MAX) return false;
  range->file = std::string(text.substr(0, colon));
  range->first = static_cast<uint32_t>(first);
  range->last = static_cast<uint32_t>(last);
  return true;
}

}  // namespace inprof::viewer
