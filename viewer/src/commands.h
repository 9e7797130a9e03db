// The viewer's commands as a table: name, one-line summary, and the function that runs the
// command from its arguments. main.cpp looks the command up here; `inprof --help` lists it.
#ifndef INPROF_VIEWER_COMMANDS_H_
#define INPROF_VIEWER_COMMANDS_H_

#include <string>
#include <string_view>
#include <vector>

namespace inprof::viewer {

struct Command {
  const char* name;
  const char* summary;  // one line for `inprof --help`
  // Runs the command; args[0] is its name. Returns the exit code (cli.h).
  int (*run)(const std::vector<std::string>& args);
};

// Every command, in the order `inprof --help` lists them.
const std::vector<Command>& Commands();
// The command called `name`, or nullptr.
const Command* FindCommand(std::string_view name);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_COMMANDS_H_
