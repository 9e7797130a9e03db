#!/usr/bin/env bash
# Generates a multi-file C++ project to build under `inprof record` (bench/record_tree.sh):
# FILES translation units, each with a class template instantiated for its own types, standard
# containers and algorithms (so most of a compile is the compiler parsing headers and
# instantiating templates, as in real projects), a shared header, a main, and a Makefile
# with one object per file and a link step. Deterministic: the same arguments give the same
# files.
#   bench/gen_cxx_project.sh DIR [FILES]
set -euo pipefail
dir=${1:?usage: gen_cxx_project.sh DIR [FILES]}
files=${2:-40}
mkdir -p "$dir/src"

cat >"$dir/src/common.h" <<'EOF'
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace gen {

// A small table keyed by K: sorted, summarised and printed; instantiated per unit and type.
template <typename K, typename V>
class Table {
 public:
  void Add(const K& key, V value) { rows_[key].push_back(value); }
  V Sum() const {
    V total{};
    for (const auto& [key, values] : rows_) total = std::accumulate(values.begin(), values.end(), total);
    return total;
  }
  std::vector<K> TopKeys(size_t n) const {
    std::vector<std::pair<V, K>> ranked;
    for (const auto& [key, values] : rows_) {
      ranked.emplace_back(std::accumulate(values.begin(), values.end(), V{}), key);
    }
    std::sort(ranked.begin(), ranked.end(), std::greater<>());
    std::vector<K> keys;
    for (size_t i = 0; i < ranked.size() && i < n; ++i) keys.push_back(ranked[i].second);
    return keys;
  }
  std::string Describe() const {
    std::ostringstream out;
    for (const auto& [key, values] : rows_) out << key << ':' << values.size() << ' ';
    return out.str();
  }

 private:
  std::map<K, std::vector<V>> rows_;
};

template <typename T, int N>
struct Unrolled {
  static T Apply(T x) { return Unrolled<T, N - 1>::Apply(x * 3 + N) ^ static_cast<T>(N); }
};
template <typename T>
struct Unrolled<T, 0> {
  static T Apply(T x) { return x; }
};

}  // namespace gen
EOF

for ((i = 0; i < files; i++)); do
  {
    echo "#include \"common.h\""
    echo "namespace gen {"
    types=(int long double)
    t=${types[i % 3]}
    {
      echo "struct Item${i}_${t} { ${t} a; ${t} b; bool operator<(const Item${i}_${t}& o) const { return a < o.a || (a == o.a && b < o.b); } };"
      echo "${t} Unit${i}_${t}(int n) {"
      echo "  Table<std::string, ${t}> by_name;"
      echo "  Table<int, ${t}> by_id;"
      echo "  std::unordered_map<std::string, std::vector<Item${i}_${t}>> groups;"
      echo "  for (int k = 0; k < n; ++k) {"
      echo "    by_name.Add(std::to_string(k % 7), static_cast<${t}>(k));"
      echo "    by_id.Add(k % 13, static_cast<${t}>(Unrolled<long, $((20 + i % 10))>::Apply(k)));"
      echo "    groups[std::to_string(k % 5)].push_back({static_cast<${t}>(k), static_cast<${t}>(n - k)});"
      echo "  }"
      echo "  for (auto& [key, items] : groups) std::sort(items.begin(), items.end());"
      echo "  std::function<${t}(${t})> twice = [](${t} v) { return v + v; };"
      echo "  return twice(by_name.Sum() + by_id.Sum()) + static_cast<${t}>(by_id.TopKeys(3).size() + by_name.Describe().size());"
      echo "}"
    }
    echo "}  // namespace gen"
    echo "double Unit${i}(int n) { return gen::Unit${i}_${t}(n); }"
  } >"$dir/src/unit$i.cpp"
done

{
  echo "#include <cstdio>"
  for ((i = 0; i < files; i++)); do echo "double Unit$i(int n);"; done
  echo "int main() {"
  echo "  double total = 0;"
  for ((i = 0; i < files; i++)); do echo "  total += Unit$i(100);"; done
  echo "  std::printf(\"%.0f\\n\", total);"
  echo "}"
} >"$dir/src/main.cpp"

cat >"$dir/Makefile" <<'EOF'
CXX ?= g++
CXXFLAGS ?= -O2 -g -std=c++17
SRCS := $(wildcard src/*.cpp)
OBJS := $(SRCS:src/%.cpp=obj/%.o)

app: $(OBJS)
	$(CXX) -o $@ $(OBJS)

obj/%.o: src/%.cpp src/common.h | obj
	$(CXX) $(CXXFLAGS) -c -o $@ $<

obj:
	mkdir -p obj

clean:
	rm -rf obj app

.PHONY: clean
EOF
