// placeholder
#include "inprof/exporters.h"
namespace inprof {
Status FilterProfile(const Profile& in, const ProfileFilter&, Profile* out) { *out = in; return Status::Ok(); }
}  // namespace inprof
