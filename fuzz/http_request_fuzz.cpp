// libFuzzer target: the pull endpoint's request parser (ParseHttpRequest, a pure function of
// the bytes a client sent so far) and the access checks that read what it accepts (the Host
// check, the bearer token). Anyone who can connect to the endpoint chooses these bytes.
//
// Besides the sanitizers' verdict, on every input:
// - the answer is 0, kHttpIncomplete, 400, 414 or 431;
// - an accepted request has an upper-case method, version HTTP/1.0 or HTTP/1.1, a target that
//   starts with '/' with no space or control byte and within the request-line limit, header
//   names that are lower-case tokens and values without CR, LF, NUL or other control bytes
//   (so nothing it hands on can split a line downstream);
// - the verdict depends only on the head: more bytes after an accepted head change nothing,
//   and the head cut one byte before its blank line is still incomplete;
// - the Host check lets through only the loopback address or localhost for a loopback socket
//   with no names configured, and a token matches only a value that contains it.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/http.h"

namespace {

using inprof::internal::HttpRequest;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "http_request_fuzz: %s\n", what);
  std::abort();
}

bool IsToken(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

void CheckAccepted(const HttpRequest& r) {
  if (r.method.empty()) Fail("empty method");
  for (char c : r.method) {
    if (c < 'A' || c > 'Z') Fail("method is not upper-case letters");
  }
  if (r.version != "HTTP/1.0" && r.version != "HTTP/1.1") Fail("version");
  if (r.target.empty() || r.target.front() != '/') Fail("target does not start with '/'");
  if (r.target.size() > inprof::internal::kHttpMaxTarget + 32) Fail("target over the limit");
  for (char c : r.target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) Fail("space or control in target");
  }
  for (const auto& [name, value] : r.headers) {
    if (name.empty()) Fail("empty header name");
    for (char c : name) {
      if (!IsToken(c)) Fail("header name is not a lower-case token");
    }
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) Fail("control character in a header value");
    }
  }
}

void CheckAccess(const HttpRequest& r) {
  sockaddr_storage loop4{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&loop4);
  v4->sin_family = AF_INET;
  v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sockaddr_storage loop6{};
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&loop6);
  v6->sin6_family = AF_INET6;
  v6->sin6_addr = in6addr_loopback;
  const std::string token = "fuzz-token-0123456789";
  for (const auto& [name, value] : r.headers) {
    if (name == "host") {
      const std::string host = Lower(value);
      if (inprof::internal::HttpHostAllowed(value, loop4, {}) && host.rfind("localhost", 0) != 0 &&
          host.rfind("127.0.0.1", 0) != 0) {
        Fail("a Host other than 127.0.0.1 or localhost passed on 127.0.0.1");
      }
      if (inprof::internal::HttpHostAllowed(value, loop6, {}) && host.rfind("localhost", 0) != 0 &&
          host.rfind("[", 0) != 0) {
        Fail("a Host other than [::1] or localhost passed on ::1");
      }
    }
    if (inprof::internal::HttpBearerMatches(value, token) &&
        value.find(token) == std::string::npos) {
      Fail("a bearer value without the token matched");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  HttpRequest request;
  const int status = inprof::internal::ParseHttpRequest(bytes, &request);
  if (status != 0 && status != inprof::internal::kHttpIncomplete && status != 400 &&
      status != 414 && status != 431) {
    Fail("unexpected answer");
  }
  if (status != 0) return 0;
  CheckAccepted(request);
  CheckAccess(request);
  // Only the head counts.
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) Fail("accepted without a blank line");
  HttpRequest again;
  if (inprof::internal::ParseHttpRequest(std::string(bytes) + "GET / HTTP/1.1\r\n\r\n", &again) !=
          0 ||
      again.target != request.target || again.headers != request.headers) {
    Fail("bytes after the head changed the verdict");
  }
  if (inprof::internal::ParseHttpRequest(bytes.substr(0, end + 3), &again) !=
      inprof::internal::kHttpIncomplete) {
    Fail("a head without its blank line was not incomplete");
  }
  return 0;
}
