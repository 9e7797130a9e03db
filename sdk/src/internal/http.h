// The little HTTP/1.1 the runtime speaks: the pull endpoint (http_server.h) serves it and the
// push client (push_client.h) sends it. Plain TCP, one request per connection
// ("Connection: close"), every read and write bounded by a deadline, never SIGPIPE.
// Control path only.
#ifndef INPROF_SDK_HTTP_H_
#define INPROF_SDK_HTTP_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inprof/status.h"

namespace inprof::internal {

using HttpFields = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;
  std::string target;  // as sent: "/debug/pprof/profile?seconds=5"
  std::string path;    // decoded path: "/debug/pprof/profile"
  HttpFields query;    // decoded, in order
  HttpFields headers;  // names lower-cased
  // The value of query parameter `name`, or nullptr.
  const std::string* Query(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  HttpFields headers;  // extra headers
  std::string body;
};

// "http://host[:port][/path]". https is refused with a message saying so.
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

// Reads one request head from a connected socket within `timeout_ms`. Returns 0 with `request`
// filled, -1 when the peer closed without sending anything, or the HTTP status to answer:
// 400 malformed, 408 too slow, 414 target too long, 431 head too large.
int ReadHttpRequest(int fd, int timeout_ms, HttpRequest* request);

std::string StatusText(int status);
// The whole response message, with Content-Length and "Connection: close".
std::string FormatHttpResponse(const HttpResponse& response);

// Writes everything within `timeout_ms`; false on error or timeout. Never raises SIGPIPE.
bool SendAll(int fd, std::string_view data, int timeout_ms);

// One HTTP POST of `body` to url.path + path_and_query, waiting at most `timeout_ms` in each
// of connect, send and receive. Returns the response status, or -1 with `error` set when no
// response came (resolution, connection, timeout, malformed response).
struct HttpClientResult {
  int status = -1;
  std::string error;
  std::string body;  // the response body, at most 4 KiB of it
};
HttpClientResult HttpPost(const HttpUrl& url, std::string_view path_and_query,
                          const HttpFields& headers, std::string_view content_type,
                          std::string_view body, int timeout_ms);

}  // namespace inprof::internal

#endif  // INPROF_SDK_HTTP_H_
