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

bool ParseOptions(std::string_view command, const std::vector<std::string>& args, size_t first,
                  const std::vector<OptionSpec>& specs, std::vector<std::string>* positional,
                  bool* help, std::string* error) {
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
      return true;
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
      *error = "unknown option '" + arg + "' for " + std::string(command);
      return false;
    }
    if (spec->optional_value && !inline_value) {
      spec->set("");
      continue;
    }
    if (!spec->value) {
      if (inline_value) {
        *error = arg + " takes no value";
        return false;
      }
      spec->set("");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        *error = arg + " needs " + spec->value;
        return false;
      }
      value = args[++i];
    }
    if (!spec->set(value)) {
      *error = arg + " needs " + spec->value + (value.empty() ? "" : ", not '" + value + "'");
      return false;
    }
  }
  return true;
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
