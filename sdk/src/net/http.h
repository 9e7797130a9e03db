// The little HTTP/1.1 the runtime speaks: the pull endpoint (http_server.h) serves it and the
// push client (push_client.h) sends it. Plain TCP, one request per connection
// ("Connection: close"), every read and write bounded by a deadline, never SIGPIPE.
// Control path only.
#ifndef INPROF_SDK_HTTP_H_
#define INPROF_SDK_HTTP_H_

#include <sys/socket.h>

#include <cstdint>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inprof/status.h"

namespace inprof::internal {

using HttpFields = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;
  std::string version;  // "HTTP/1.1" or "HTTP/1.0"
  std::string target;   // as sent: "/debug/pprof/profile?seconds=5"
  std::string path;     // decoded path: "/debug/pprof/profile"
  HttpFields query;     // decoded, in order
  HttpFields headers;   // names lower-cased
  // The value of query parameter `name`, or nullptr.
  const std::string* Query(std::string_view name) const;
  // How many times header `name` (lower case) was sent, and the first value, or nullptr.
  size_t HeaderCount(std::string_view name) const;
  const std::string* Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  HttpFields headers;  // extra headers
  std::string body;
  bool abandoned = false;  // the client went away: nothing is sent
};

// "http://host[:port][/path]". https is refused with a message saying so, and so is every
// character that has no place in an HTTP request line or Host header (spaces, CR, LF, other
// control characters, non-ASCII bytes, '<', '"', '{', '\\', ...): the URL goes onto the wire
// as it is, so a line break in it would add headers or requests of its author's choosing.
// Host: letters, digits, '-', '.', '_', or a bracketed IPv6 address. Path: RFC 3986 pchar
// and '/', percent escapes well formed. No query, fragment or credentials.
struct HttpUrl {
  std::string host;
  uint16_t port = 80;
  std::string path;  // without a trailing '/'; empty for the root
  std::string text;  // the URL as given, for messages
};
Status ParseHttpUrl(std::string_view url, HttpUrl* out);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string PercentEncode(std::string_view text);
// Decodes %XX (and '+' as a space, as HTML forms send it); false on a malformed escape.
bool PercentDecode(std::string_view text, std::string* out);

// A listening address: "HOST:PORT", "[IPV6]:PORT" or ":PORT" (loopback). Numeric hosts and
// "localhost" only: the endpoint must not depend on name resolution.
struct ListenAddress {
  sockaddr_storage address{};
  socklen_t length = 0;
  std::string text;  // normalized, e.g. "127.0.0.1:6060"
};
Status ParseListenAddress(std::string_view text, ListenAddress* out);

// True for 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8.
bool IsLoopbackAddress(const sockaddr_storage& address);

// Limits of a request head: the request line, and the line with every header field.
inline constexpr size_t kHttpMaxTarget = 4 * 1024;
inline constexpr size_t kHttpMaxHead = 16 * 1024;
// ParseHttpRequest's answer while the head's blank line has not arrived (within the limits).
inline constexpr int kHttpIncomplete = -2;

// Parses a request head from the bytes received so far: a pure function over any bytes (the
// fuzz target's entry, fuzz/http_request_fuzz.cpp). Returns 0 with `request` filled (bytes
// after the head's blank line are ignored: one request per connection, bodies are not read),
// kHttpIncomplete, or the status to answer: 400 malformed (request line, version other than
// HTTP/1.0 and 1.1, a header name that is not a token, a control character in a value, a
// bad escape in the target), 414 request line over kHttpMaxTarget, 431 head over kHttpMaxHead.
int ParseHttpRequest(std::string_view bytes, HttpRequest* request);

// Reads one request head from a connected socket within `timeout_ms`. Returns 0 with `request`
// filled, -1 when the peer closed without sending anything or `cancel_fd` (when >= 0) became
// readable, or the HTTP status to answer: 400 malformed, 408 too slow, 414 target too long,
// 431 head too large.
int ReadHttpRequest(int fd, int timeout_ms, HttpRequest* request, int cancel_fd = -1);

// The pull endpoint's DNS-rebinding defence: may a request with Host header value `host` be
// served on a connection whose local address is `local`? Yes for that address as an IP
// literal ("127.0.0.1", "[::1]"; an IPv4-mapped local address also matches its IPv4 form),
// for "localhost" when `local` is loopback, and for every name in `names` (lower case); each
// with or without a port, and the port is not compared (an ssh tunnel or port forward shows
// its own). A rebinding attack makes a browser send its own DNS name, never one of these.
bool HttpHostAllowed(std::string_view host, const sockaddr_storage& local,
                     const std::vector<std::string>& names);

// Whether an Authorization header value carries `token` as "Bearer TOKEN" (the scheme's case
// does not matter). The comparison takes the same time wherever the first difference is.
bool HttpBearerMatches(std::string_view authorization, std::string_view token);

std::string StatusText(int status);
// The whole response message, with Content-Length and "Connection: close".
std::string FormatHttpResponse(const HttpResponse& response);

// Which open file a descriptor of ours refers to (fstat's st_dev and st_ino, taken when we
// made it): the program owns every fd number and may close ours (closefrom(3), close_range)
// and reuse the number for a file of its own. A socket's identity is its own; eventfds share
// one inode, so an eventfd of the program in the same number would pass (a regular file,
// pipe or socket does not). Not async-signal-safe.
struct FdIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool known = false;
};
FdIdentity IdentityOf(int fd);
// `fd` still refers to the file `identity` was taken from.
bool StillOurs(int fd, const FdIdentity& identity);

// Writes everything within `timeout_ms`; false on error, timeout, or when `cancel_fd` (when
// >= 0) becomes readable. Never raises SIGPIPE.
bool SendAll(int fd, std::string_view data, int timeout_ms, int cancel_fd = -1);

// One HTTP POST of `body` to url.path + path_and_query, waiting at most `timeout_ms` in each
// of connect, send and receive, and giving up at once when `cancel_fd` (when >= 0) becomes
// readable; name resolution included (a lookup still running then is abandoned). Returns the
// response status, or -1 with `error` set when no response came (resolution, connection,
// timeout, cancelled, malformed response, a header with a line break).
struct HttpClientResult {
  int status = -1;
  std::string error;
  std::string body;  // the response body, at most 4 KiB of it
};
HttpClientResult HttpPost(const HttpUrl& url, std::string_view path_and_query,
                          const HttpFields& headers, std::string_view content_type,
                          std::string_view body, int timeout_ms, int cancel_fd = -1);

}  // namespace inprof::internal

#endif  // INPROF_SDK_HTTP_H_
