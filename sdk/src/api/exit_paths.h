// The exit paths (exit_paths.cpp, docs/lifecycle.md): exit, quick_exit, _exit and the
// termination signals each write the profile once, and exec takes the same turn.
#ifndef INPROF_SDK_EXIT_PATHS_H_
#define INPROF_SDK_EXIT_PATHS_H_

#include <signal.h>
#include <sys/types.h>

namespace inprof::internal {

enum class ExitPath { kExit, kQuickExit, kUnderscoreExit, kSignal };
// The process is ending by `path` (`status`: what _exit was given, 128 + the signal): the
// first caller writes the profile, the others wait for it (bounded); then a termination
// signal our handler took meanwhile ends the process. Does nothing in a process that does not
// own the runtime's state (a vfork child). Not async-signal-safe, except that it is bounded
// by a watchdog on the _exit path.
void FinishForExit(ExitPath path, int status);
// exec (exec_hooks.cpp): takes the exit paths' write turn (false when this process does not
// own the runtime's state, or an exit path already took it) and gives it back afterwards.
// Another exit path waits meanwhile, as for an exit's write.
bool BeginExecWrite();
void EndExecWrite();
// Registers the atexit and at_quick_exit handlers (once) and makes this process the owner.
void ExitPathsInit();
// The thread that finishes the profile on SIGTERM/SIGINT: its tid, 0 if it could not start.
pid_t StartTerminationWatcher();
// Our SIGTERM/SIGINT handlers, for the signals whose action is still the default.
void InstallTerminationHandlers();
bool TerminationHandlersInstalled();
// The disposition the program sees (sigaction_hooks.cpp): for a managed termination signal,
// our handler stands for the program's SIG_DFL. TerminationAction fills in our action,
// IsTerminationAction tells it apart, and NoteTerminationHandlerInstalled records that it is
// installed (a forked child then starts a watcher). Async-signal-safe.
bool TerminationSignalManaged(int signal);
void TerminationAction(struct sigaction* action);
bool IsTerminationAction(const struct sigaction& action);
void NoteTerminationHandlerInstalled();
// True when the watcher thread runs in this process (not in a forked child).
bool TerminationWatcherRunsHere();
// In a forked child (inside fork()): forgets the parent's exit state. `profiled`: whether the
// child follows the parent's profile; one that does not has no exit work until it starts a
// profile of its own (ExitPathsInit). Async-signal-safe.
void ExitPathsAfterForkInChild(bool profiled);

}  // namespace inprof::internal

#endif  // INPROF_SDK_EXIT_PATHS_H_
