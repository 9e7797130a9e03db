// Function names shortened for the terminal the way pprof shows them (viewer/src/names.h).
#include "names.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>

namespace inprof::viewer {
namespace {

TEST(ShortFunctionName, DropsTemplateArgumentsParametersAndReturnType) {
  EXPECT_EQ(ShortFunctionName("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector::push_back");
  EXPECT_EQ(ShortFunctionName("void ns::Run<Foo, 3>(Foo&, std::function<void (int)>)"), "ns::Run");
  EXPECT_EQ(ShortFunctionName("std::__cxx11::basic_string<char, std::char_traits<char>, "
                              "std::allocator<char> >::_M_append(char const*, unsigned long)"),
            "std::__cxx11::basic_string::_M_append");
  EXPECT_EQ(ShortFunctionName("compute(int)"), "compute");
  EXPECT_EQ(ShortFunctionName("Foo::~Foo()"), "Foo::~Foo");
  EXPECT_EQ(ShortFunctionName("foo[abi:cxx11](int)"), "foo");
}

TEST(ShortFunctionName, KeepsQualifiersThatNameThings) {
  EXPECT_EQ(ShortFunctionName("void (anonymous namespace)::Run<Foo>(Foo&) const"),
            "(anonymous namespace)::Run");
  EXPECT_EQ(ShortFunctionName("main::{lambda(int)#1}::operator()(int) const"),
            "main::{lambda#1}::operator()");
  EXPECT_EQ(ShortFunctionName("(lambda at /src/app/main.cpp:55:12)::operator()() const"),
            "(lambda at /src/app/main.cpp:55:12)::operator()");
  EXPECT_EQ(ShortFunctionName("hot50(int) [clone .cold]"), "hot50 [clone .cold]");
  EXPECT_EQ(ShortFunctionName("Foo::operator->() &&"), "Foo::operator->");
}

TEST(ShortFunctionName, OperatorsKeepTheirSymbols) {
  EXPECT_EQ(ShortFunctionName("bool operator< <int>(Pair<int> const&, Pair<int> const&)"),
            "operator<");
  EXPECT_EQ(ShortFunctionName("std::ostream& std::operator<< <std::char_traits<char> >"
                              "(std::ostream&, char const*)"),
            "std::operator<<");
  EXPECT_EQ(ShortFunctionName("operator/(Ratio, Ratio)"), "operator/");
  EXPECT_EQ(ShortFunctionName("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(ShortFunctionName("Foo::operator unsigned long() const"),
            "Foo::operator unsigned long");
  EXPECT_EQ(ShortFunctionName("Matrix::operator[](int)"), "Matrix::operator[]");
}

TEST(ShortFunctionName, OtherNamesAreLeftAlone) {
  for (const char* name : {"main", "__libc_start_main", "(main chunk)", "libc.so.6+0x1234",
                           "[unknown]", "[truncated]", "sort+0x77b8", "compute /app/x.lua:12",
                           "weird\nname\t ", "parse;tokenize", "unbalanced(int", ""}) {
    EXPECT_EQ(ShortFunctionName(name), name);
  }
}

// Profiles from elsewhere carry any names; every listing shortens each of them. A scan that
// went back over the name at each '<' would take ~10^12 steps on these 1 MB names (hours);
// one pass takes milliseconds, so a generous bound still tells the two apart.
TEST(ShortFunctionName, PathologicalNamesOfAMegabyteTakeLinearTime) {
  constexpr size_t kDepth = 250000;
  std::string unbalanced;
  for (size_t i = 0; i < kDepth; ++i) unbalanced += "a<";
  const std::string deep = "f<" + unbalanced + std::string(kDepth + 1, '>') + "(int)";
  std::string lists = "f";
  for (size_t i = 0; i < kDepth / 2; ++i) lists += "<a>(b)";
  std::string words = "int";
  for (size_t i = 0; i < kDepth; ++i) words += " w";
  words += "(x) const";
  std::string operators;
  for (size_t i = 0; i < kDepth / 4; ++i) operators += "operator<<";
  operators += "(x)";
  std::string qualifiers = "f()";
  for (size_t i = 0; i < kDepth / 2; ++i) qualifiers += " const";
  const std::pair<const char*, const std::string*> names[] = {
      {"deep", &deep},   {"unbalanced", &unbalanced}, {"lists", &lists},
      {"words", &words}, {"operators", &operators},   {"qualifiers", &qualifiers}};
  for (const auto& [what, name] : names) {
    const auto start = std::chrono::steady_clock::now();
    const std::string shortened = ShortFunctionName(*name);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 2.0) << what << " (" << name->size() << " bytes)";
    EXPECT_LE(shortened.size(), name->size()) << what;
  }
  EXPECT_EQ(ShortFunctionName(deep), "f");
  EXPECT_EQ(ShortFunctionName(unbalanced), unbalanced);
  EXPECT_EQ(ShortFunctionName(qualifiers), "f");
}

TEST(DisplayName, FullNamesOnRequest) {
  EXPECT_EQ(DisplayName("f(int)", true), "f(int)");
  EXPECT_EQ(DisplayName("f(int)", false), "f");
}

}  // namespace
}  // namespace inprof::viewer
