// Writing a file so that readers see the old contents or the new, never a part.
#ifndef INPROF_ATOMIC_WRITE_H_
#define INPROF_ATOMIC_WRITE_H_

#include <string>
#include <string_view>

#include "inprof/status.h"

namespace inprof {

// Writes `contents` to `path` atomically (temporary file + rename). The temporary file is
// created with O_EXCL | O_NOFOLLOW under a random name, so nothing planted in a shared
// directory (a symlink, another process's file) is followed or written through. With
// `replace` false an existing `path` is never replaced: the write fails with
// StatusCode::kAlreadyExists (renameat2 RENAME_NOREPLACE, or link(2) where the file system lacks
// it). With `durable` (the default) the file and its directory are synced before the call returns.
// `mode` -1 gives a new file's usual permissions (0666 less the umask); any other value gives
// exactly those permission bits whatever the umask (fchmod), and the temporary file is never
// readable by others before that (created 0600). Not async-signal-safe.
Status WriteFileAtomically(const std::string& path, std::string_view contents, bool replace = true,
                           bool durable = true, int mode = -1);

}  // namespace inprof

#endif  // INPROF_ATOMIC_WRITE_H_
