// `inprof`: finds the command in the table (commands.h) and runs it. Run as `addr2line`
// (through a link of that name, which is how perf finds it on PATH) it is binutils'
// addr2line.
//
// Exit codes: 0 success, 1 bad or unreadable input, 2 bad usage.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "addr2line.h"
#include "cli.h"
#include "commands.h"

namespace inprof::viewer {
namespace {

void PrintHelp() {
  std::cout << R"(usage: inprof COMMAND [OPTIONS] PROFILE ...

Reads a profile: annotation JSON written by inprof, pprof (*.pb.gz, from inprof, Go and
others), perf.log, folded stacks, `perf script` output, `perf report -g folded` output or a
*.speedscope.json profile (told apart by their content; gzipped too), and shows where the
time went. Commands that read a profile take --from/--to,
--thread and --label to look at part of it (inputs with sample times: perf script output,
*.speedscope.json).

commands:
)";
  for (const Command& command : Commands()) {
    std::string name = command.name;
    name.resize(std::max<size_t>(name.size() + 1, 10), ' ');
    std::cout << "  " << name << command.summary << '\n';
  }
  std::cout << "\nRun `inprof help COMMAND` (or `inprof COMMAND --help`) for a command's options "
               "and examples;\n`inprof --version` for the version.\n";
}

std::string CommandNames() {
  std::string names;
  for (const Command& command : Commands())
    names += (names.empty() ? "" : ", ") + std::string(command.name);
  return names;
}

int Main(int argc, char** argv) {
  const char* self = std::strrchr(argv[0], '/');
  if (std::strcmp(self != nullptr ? self + 1 : argv[0], "addr2line") == 0) {
    return Addr2lineMain(argc, argv);
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return UsageError("", "missing command (" + CommandNames() + ")");
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "inprof " << INPROF_VERSION << '\n';
    return 0;
  }
  // `inprof help COMMAND` is `inprof COMMAND --help`, as git and go have it.
  if (args[0] == "help" && args.size() > 1) {
    const Command* command = FindCommand(args[1]);
    if (!command) {
      return UsageError("", "unknown command '" + args[1] + "' (" + CommandNames() + ")");
    }
    return command->run({args[1], "--help"});
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    PrintHelp();
    return 0;
  }
  const Command* command = FindCommand(args[0]);
  if (!command) return UsageError("", "unknown command '" + args[0] + "' (" + CommandNames() + ")");
  return command->run(args);
}

}  // namespace
}  // namespace inprof::viewer

int main(int argc, char** argv) { return inprof::viewer::Main(argc, argv); }
