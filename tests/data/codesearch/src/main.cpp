// Synthetic source for the code-search tests: main() calls everything profile.folded samples.
#include <string>
#include <vector>

#include "util.h"

int main() {
  auto lines = render({1, 2, 3});
  send_all(lines);
  flush_all(lines);
  sync_all(lines);
  std::string cold = std::to_string(lines.size());
  return layout(7).empty() ? 1 : 0;
}
