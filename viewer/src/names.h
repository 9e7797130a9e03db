// Function names for people: long C++ names shortened the way pprof shows them by default.
#ifndef INPROF_VIEWER_NAMES_H_
#define INPROF_VIEWER_NAMES_H_

#include <string>
#include <string_view>

namespace inprof::viewer {

// `name` without template arguments, parameter lists, return type, trailing cv/ref
// qualifiers and ABI tags, keeping the qualified name and operators readable:
//   "std::vector<int, std::allocator<int> >::push_back(int const&)" -> "std::vector::push_back"
//   "void (anonymous namespace)::Run<Foo>(Foo&) const"       -> "(anonymous namespace)::Run"
//   "bool operator< <int>(Pair<int> const&, Pair<int> const&)" -> "operator<"
//   "main::{lambda(int)#1}::operator()(int) const"           -> "main::{lambda#1}::operator()"
// Names that are not C++ signatures ("main", "(main chunk)", "libc.so.6+0x1234", "[unknown]")
// come back unchanged. pprof's default demangling drops the same parts (NoParams,
// NoTemplateParams); its -symbolize=demangle=full keeps them, as --full-names does here.
std::string ShortFunctionName(std::string_view name);

// ShortFunctionName(name) unless `full`.
inline std::string DisplayName(std::string_view name, bool full) {
  return full ? std::string(name) : ShortFunctionName(name);
}

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_NAMES_H_
