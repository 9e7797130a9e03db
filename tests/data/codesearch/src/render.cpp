// Synthetic source for the code-search tests: profile.folded samples lines 10-19 of render()
// with decreasing weight (100, 90, ... 10) and lines 32-38 of layout() (7, 6, ... 1).
#include <string>
#include <vector>

std::vector<std::string> render(const std::vector<int>& values) {
  std::vector<std::string> out;
  out.reserve(values.size());
  for (int v : values) {
    std::string a = std::to_string(v);
    std::string b = std::to_string(v + 1);
    std::string c = std::to_string(v + 2);
    std::string d = std::to_string(v + 3);
    std::string e = std::to_string(v + 4);
    std::string f = std::to_string(v + 5);
    std::string g = std::to_string(v + 6);
    std::string h = std::to_string(v + 7);
    std::string i = std::to_string(v + 8);
    std::string j = std::to_string(v + 9);
    out.push_back(a + b + c + d + e + f + g + h + i + j);
  }
  return out;
}

// Never sampled: the same pattern on a cold path.
std::string render_cold(int v) {
  std::string s = std::to_string(v);
  return s;
}

std::string layout(int v) {
  std::string s = std::to_string(v);
  s += std::to_string(v * 2);
  s += std::to_string(v * 3);
  s += std::to_string(v * 4);
  s += std::to_string(v * 5);
  s += std::to_string(v * 6);
  s += std::to_string(v * 7);
  return s;
}
