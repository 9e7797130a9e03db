// placeholder
#include "inprof/exporters.h"
namespace inprof {
void WriteSpeedscope(const Profile&, const ExportOptions&, std::ostream&) {}
}  // namespace inprof
