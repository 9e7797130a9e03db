// What autostart tells the exec hooks (exec_hooks.cpp, docs/lifecycle.md). Not
// async-signal-safe.
#ifndef INPROF_SDK_EXEC_HOOKS_H_
#define INPROF_SDK_EXEC_HOOKS_H_

#include <string>
#include <vector>

namespace inprof::internal {

// The segment this image writes: N from INPROF_EXEC_SEGMENT=<pid>:<N> when the pid is ours
// (an earlier image of this process wrote before its exec), else 0.
int ExecSegmentFromEnvironment();
// The outputs this process's images derive their names from (before PathForExec), and the
// segment of this image.
void NoteExecOutputs(const std::vector<std::string>& outputs, int segment);

}  // namespace inprof::internal

#endif  // INPROF_SDK_EXEC_HOOKS_H_
