// HTTP/1.1 framing, URLs and sockets with deadlines for the pull endpoint and the push
// client. Control path.
#include "inprof/status.h"
#include "net/http.h"

#include "inprof/printable.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>

namespace inprof::internal {
namespace {

int64_t NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

constexpr int kCancelled = -2;

// Waits until `fd` is ready for `events` or the deadline passes: 1 ready, 0 timeout, -1 error,
// kCancelled when `cancel_fd` (ignored when negative) is readable. errno says which.
int WaitFd(int fd, short events, int64_t deadline_ms, int cancel_fd) {
  for (;;) {
    const int64_t left = deadline_ms - NowMs();
    if (left <= 0) {
      errno = ETIMEDOUT;
      return 0;
    }
    struct pollfd p[2] = {{fd, events, 0}, {cancel_fd, POLLIN, 0}};
    const int n =
        poll(p, cancel_fd >= 0 ? 2 : 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (n > 0) {
      if (cancel_fd >= 0 && p[1].revents != 0) {
        errno = ECANCELED;
        return kCancelled;
      }
      return 1;
    }
    if (n == 0) continue;  // the deadline check above decides
    if (errno != EINTR) return -1;
  }
}

// RFC 9110 token characters (method and header names).
bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A header value: visible characters, spaces, tabs and obs-text; no CR, LF, NUL or other
// control characters (a lone CR or LF would be read as a line break by something downstream).
bool IsFieldValue(std::string_view value) {
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

bool IsUnreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

// The URL for a message: control characters and non-ASCII bytes as \xNN, so a message never
// carries a line break of the input's choosing.
std::string Printable(std::string_view text) {
  return inprof::Printable(text, {.escape_non_ascii = true});
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParsePort(std::string_view text, uint16_t* port) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value > 65535) {
    return false;
  }
  *port = static_cast<uint16_t>(value);
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits "a=1&b=2" into decoded pairs; false on a malformed escape.
bool ParseQuery(std::string_view query, HttpFields* out) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key, value;
    if (!PercentDecode(item.substr(0, eq), &key)) return false;
    if (eq != std::string_view::npos && !PercentDecode(item.substr(eq + 1), &value)) return false;
    out->emplace_back(std::move(key), std::move(value));
  }
  return true;
}

bool ParseHead(std::string_view head, HttpRequest* request) {
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  // request-line = method SP request-target SP HTTP-version
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return false;
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return false;
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return false;
  request->version = std::string(version);
  for (char c : method) {
    if (c < 'A' || c > 'Z') return false;
  }
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  }
  if (target.empty() || target.front() != '/') return false;
  request->method = std::string(method);
  request->target = std::string(target);
  size_t q = target.find('?');
  if (!PercentDecode(target.substr(0, q), &request->path)) return false;
  if (q != std::string_view::npos && !ParseQuery(target.substr(q + 1), &request->query)) {
    return false;
  }
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  while (!rest.empty()) {
    eol = rest.find("\r\n");
    std::string_view field = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 2);
    if (field.empty()) break;
    size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    std::string_view name = field.substr(0, colon);
    for (char c : name) {
      if (!IsTokenChar(c)) return false;
    }
    std::string_view value = TrimSpaces(field.substr(colon + 1));
    if (!IsFieldValue(value)) return false;
    request->headers.emplace_back(Lower(name), std::string(value));
  }
  return true;
}

// A name lookup glibc's resolver thread works on (getaddrinfo_a): it writes into this until
// the lookup is done, so an abandoned one is never freed (a few hundred bytes per lookup a
// hung resolver never finishes).
struct PendingLookup {
  struct gaicb cb;
  struct addrinfo hints;
  std::string host;
  std::string port;
};

// getaddrinfo(host, port) that the deadline and `cancel_fd` can abandon: the C library's
// resolver cannot be interrupted (a DNS server that never answers holds a plain getaddrinfo
// for its timeout times its attempts, 10 s by default here, longer with RES_OPTIONS), and a
// push under way at exit must end within the flush time (docs/network.md). A numeric
// address needs no resolver and is converted here; a name is resolved by glibc's own
// resolver thread (getaddrinfo_a), which is left to finish on its own when we stop waiting.
// The address list (the caller frees it), or kUnavailable saying why there is none.
StatusOr<struct addrinfo*> ResolveAbandonable(const std::string& host, const std::string& port,
                                              int64_t deadline_ms, int cancel_fd) {
  struct addrinfo* out = nullptr;
  struct addrinfo hints;
  std::memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &out) == 0) return out;
  hints.ai_flags = 0;
  auto* lookup = new PendingLookup{};
  lookup->hints = hints;
  lookup->host = host;
  lookup->port = port;
  lookup->cb.ar_name = lookup->host.c_str();
  lookup->cb.ar_service = lookup->port.c_str();
  lookup->cb.ar_request = &lookup->hints;
  struct gaicb* list[1] = {&lookup->cb};
  int rc = getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr);
  if (rc != 0) {
    delete lookup;
    return Status::Unavailable("cannot resolve " + host + ": " + gai_strerror(rc));
  }
  for (;;) {
    rc = gai_error(&lookup->cb);
    if (rc != EAI_INPROGRESS) break;
    const int64_t left = deadline_ms - NowMs();
    struct pollfd cancel = {cancel_fd, POLLIN, 0};
    const bool cancelled = cancel_fd >= 0 && poll(&cancel, 1, 0) > 0;
    if (left <= 0 || cancelled) {
      if (gai_cancel(&lookup->cb) == EAI_CANCELED) {
        delete lookup;  // never started: nothing writes it any more
      } else if (gai_error(&lookup->cb) != EAI_INPROGRESS) {
        if (lookup->cb.ar_result != nullptr) freeaddrinfo(lookup->cb.ar_result);
        delete lookup;
      }  // else: still being resolved; abandoned (see PendingLookup)
      return Status::Unavailable("cannot resolve " + host + ": " +
                                 (cancelled ? "cancelled at stop (the flush time ran out)"
                                            : "timed out"));
    }
    const struct gaicb* wait[1] = {&lookup->cb};
    const struct timespec slice = {0, static_cast<long>(std::min<int64_t>(left, 10)) * 1000000};
    gai_suspend(wait, 1, &slice);
  }
  if (rc != 0) {
    delete lookup;
    return Status::Unavailable("cannot resolve " + host + ": " + gai_strerror(rc));
  }
  out = lookup->cb.ar_result;
  delete lookup;
  return out;
}

// A connected socket, or kUnavailable saying why there is none.
StatusOr<int> Connect(const HttpUrl& url, int64_t deadline_ms, int cancel_fd) {
  const std::string port = std::to_string(url.port);
  StatusOr<struct addrinfo*> resolved = ResolveAbandonable(url.host, port, deadline_ms, cancel_fd);
  if (!resolved.ok()) return resolved.status();
  struct addrinfo* list = *resolved;
  int fd = -1;
  std::string last = "no address";
  for (struct addrinfo* a = list; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last = std::strerror(errno);
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      int err = errno;
      if (err == EINPROGRESS) {
        const int ready = WaitFd(fd, POLLOUT, deadline_ms, cancel_fd);
        socklen_t len = sizeof err;
        if (ready == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
          break;
        }
        if (ready == 0) err = ETIMEDOUT;
        if (ready == kCancelled) {
          // Said the way every other cancelled step says it.
          close(fd);
          freeaddrinfo(list);
          return Status::Unavailable("cannot connect to " + url.host + ":" + port +
                                     ": cancelled at stop (the flush time ran out)");
        }
      }
      last = std::strerror(err);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(list);
  if (fd < 0) return Status::Unavailable("cannot connect to " + url.host + ":" + port + ": " + last);
  return fd;
}

}  // namespace

FdIdentity IdentityOf(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return {};
  return FdIdentity{st.st_dev, st.st_ino, true};
}

bool StillOurs(int fd, const FdIdentity& identity) {
  const FdIdentity now = IdentityOf(fd);
  return identity.known && now.known && now.dev == identity.dev && now.ino == identity.ino;
}

const std::string* HttpRequest::Query(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return &value;
  }
  return nullptr;
}

size_t HttpRequest::HeaderCount(std::string_view name) const {
  size_t n = 0;
  for (const auto& [key, value] : headers) n += key == name;
  return n;
}

const std::string* HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return &value;
  }
  return nullptr;
}

Status ParseHttpUrl(std::string_view url, HttpUrl* out) {
  HttpUrl result;
  result.text = std::string(url);
  const std::string shown = "'" + Printable(url) + "'";
  // First, what can never be in a URL: it would end the request line or a header.
  for (size_t i = 0; i < url.size(); ++i) {
    const auto u = static_cast<unsigned char>(url[i]);
    if (u <= 0x20 || u >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      return Status::Error(shown + ": character 0x" + kHex[u >> 4] + kHex[u & 15] +
                           " at position " + std::to_string(i + 1) +
                           " is not allowed in a URL (no spaces, line breaks, control "
                           "characters or non-ASCII bytes; percent-encode them in the path)");
    }
  }
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, 8) == "https://") {
    return Status::Error(shown +
                         ": https is not supported; push to a plain http:// address (for "
                         "example a local TLS-terminating proxy)");
  }
  if (url.substr(0, kScheme.size()) != kScheme) {
    return Status::Error(shown + ": expected http://HOST[:PORT][/PATH]");
  }
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find_first_of("?#") != std::string_view::npos ||
      path.find_first_of("?#") != std::string_view::npos) {
    return Status::Error(shown + ": the URL may not have a query or fragment");
  }
  if (authority.find('@') != std::string_view::npos) {
    return Status::Error(shown + ": credentials in the URL are not supported");
  }
  // The path goes onto the request line as it is: RFC 3986 pchar and '/' only.
  for (size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (c == '%') {
      if (i + 2 >= path.size() || HexValue(path[i + 1]) < 0 || HexValue(path[i + 2]) < 0) {
        return Status::Error(shown + ": a '%' in the path must start an escape like %2F");
      }
      i += 2;
      continue;
    }
    if (!IsUnreserved(c) && std::string_view("!$&'()*+,;=:@/").find(c) == std::string_view::npos) {
      return Status::Error(shown + ": the character '" + std::string(1, c) +
                           "' is not allowed in a URL path; percent-encode it");
    }
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::string_view host = authority;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Status::Error(shown + ": unterminated IPv6 address");
    }
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':' || !ParsePort(after.substr(1), &result.port) || result.port == 0) {
        return Status::Error(shown + ": bad port");
      }
    }
    struct in6_addr v6;
    if (inet_pton(AF_INET6, std::string(host).c_str(), &v6) != 1) {
      return Status::Error(shown + ": '[" + std::string(host) + "]' is not an IPv6 address");
    }
  } else {
    size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      if (!ParsePort(authority.substr(colon + 1), &result.port) || result.port == 0) {
        return Status::Error(shown + ": bad port '" + std::string(authority.substr(colon + 1)) +
                             "'");
      }
    }
    for (char c : host) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_';
      if (!ok) {
        return Status::Error(shown +
                             ": bad host (letters, digits, '-', '.' and '_', or an IPv6 "
                             "address in brackets)");
      }
    }
  }
  if (host.empty()) return Status::Error(shown + ": no host");
  result.host = std::string(host);
  result.path = std::string(path);
  *out = std::move(result);
  return Status::Ok();
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool PercentDecode(std::string_view text, std::string* out) {
  out->clear();
  out->reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return false;
      const int hi = HexValue(text[i + 1]);
      const int lo = HexValue(text[i + 2]);
      if (hi < 0 || lo < 0) return false;
      *out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+') {
      *out += ' ';
    } else {
      *out += c;
    }
  }
  return true;
}

Status ParseListenAddress(std::string_view text, ListenAddress* out) {
  ListenAddress result;
  const std::string given(text);
  std::string_view host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::Error("'" + given + "': expected [IPV6]:PORT");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return Status::Error("'" + given + "': expected HOST:PORT (for example 127.0.0.1:6060)");
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  uint16_t port = 0;
  if (!ParsePort(port_text, &port)) {
    return Status::Error("'" + given + "': bad port '" + std::string(port_text) + "'");
  }
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  const std::string host_text(host);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&result.address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&result.address);
  if (inet_pton(AF_INET, host_text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    result.length = sizeof *v4;
    result.text = host_text + ":" + std::to_string(port);
  } else if (inet_pton(AF_INET6, host_text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    result.length = sizeof *v6;
    result.text = "[" + host_text + "]:" + std::to_string(port);
  } else {
    return Status::Error("'" + given + "': the host must be a numeric address or localhost");
  }
  *out = result;
  return Status::Ok();
}

bool IsLoopbackAddress(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    if (IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr) && v6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

int ParseHttpRequest(std::string_view bytes, HttpRequest* request) {
  // A request line that is already too long is refused before the rest arrives.
  const size_t eol = bytes.find("\r\n");
  if (eol == std::string_view::npos ? bytes.size() > kHttpMaxTarget + 32
                                    : eol > kHttpMaxTarget + 32) {
    return 414;
  }
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos || end > kHttpMaxHead) {
    return bytes.size() > kHttpMaxHead ? 431 : kHttpIncomplete;
  }
  HttpRequest parsed;
  if (!ParseHead(bytes.substr(0, end + 2), &parsed)) return 400;
  *request = std::move(parsed);
  return 0;
}

int ReadHttpRequest(int fd, int timeout_ms, HttpRequest* request, int cancel_fd) {
  const int64_t deadline = NowMs() + timeout_ms;
  std::string head;
  char buf[4096];
  for (;;) {
    const int parsed = ParseHttpRequest(head, request);
    if (parsed != kHttpIncomplete) return parsed;
    const int ready = WaitFd(fd, POLLIN, deadline, cancel_fd);
    if (ready == 0) return head.empty() ? -1 : 408;
    if (ready < 0) return -1;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0) return head.empty() ? -1 : 400;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    head.append(buf, static_cast<size_t>(n));
  }
}

bool HttpHostAllowed(std::string_view host, const sockaddr_storage& local,
                     const std::vector<std::string>& names) {
  std::string_view name;
  std::string_view port;
  const bool bracketed = !host.empty() && host.front() == '[';
  if (bracketed) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(1, close - 1);
    port = host.substr(close + 1);
  } else {
    const size_t colon = host.find(':');
    name = host.substr(0, colon);
    port = colon == std::string_view::npos ? std::string_view() : host.substr(colon);
  }
  if (!port.empty()) {
    uint16_t value = 0;
    if (port.front() != ':' || !ParsePort(port.substr(1), &value)) return false;
  }
  if (name.empty()) return false;
  const std::string text(name);
  // IP literals: the connection's own local address (v4, v6, or v4 seen through a v6 socket).
  struct in6_addr v6;
  struct in_addr v4;
  const auto* local4 = reinterpret_cast<const sockaddr_in*>(&local);
  const auto* local6 = reinterpret_cast<const sockaddr_in6*>(&local);
  if (bracketed) {
    if (inet_pton(AF_INET6, text.c_str(), &v6) != 1) return false;
    return local.ss_family == AF_INET6 && std::memcmp(&v6, &local6->sin6_addr, sizeof v6) == 0;
  }
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    if (local.ss_family == AF_INET) return v4.s_addr == local4->sin_addr.s_addr;
    return local.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&local6->sin6_addr) &&
           std::memcmp(&v4, &local6->sin6_addr.s6_addr[12], 4) == 0;
  }
  const std::string lower = Lower(name);
  if (lower == "localhost" && IsLoopbackAddress(local)) return true;
  for (const std::string& allowed : names) {
    if (lower == allowed) return true;
  }
  return false;
}

bool HttpBearerMatches(std::string_view authorization, std::string_view token) {
  std::string_view value = TrimSpaces(authorization);
  if (token.empty() || value.size() < 7 || Lower(value.substr(0, 6)) != "bearer" ||
      (value[6] != ' ' && value[6] != '\t')) {
    return false;
  }
  value = TrimSpaces(value.substr(6));
  // Every byte of the token is compared whatever the sent value is: the time depends on
  // the token's length only, never on how much of it a guess got right.
  unsigned diff = value.size() == token.size() ? 0u : 1u;
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char sent = i < value.size() ? static_cast<unsigned char>(value[i]) : 0;
    diff |= sent ^ static_cast<unsigned char>(token[i]);
  }
  return diff == 0;
}

std::string StatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string FormatHttpResponse(const HttpResponse& response) {
  std::string out =
      "HTTP/1.1 " + std::to_string(response.status) + " " + StatusText(response.status) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  out += "Connection: close\r\n";
  out += "X-Content-Type-Options: nosniff\r\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  out += response.body;
  return out;
}

bool SendAll(int fd, std::string_view data, int timeout_ms, int cancel_fd) {
  const int64_t deadline = NowMs() + timeout_ms;
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (WaitFd(fd, POLLOUT, deadline, cancel_fd) != 1) return false;
      continue;
    }
    return false;
  }
  return true;
}

HttpClientResult HttpPost(const HttpUrl& url, std::string_view path_and_query,
                          const HttpFields& headers, std::string_view content_type,
                          std::string_view body, int timeout_ms, int cancel_fd) {
  HttpClientResult result;
  for (const auto& [name, value] : headers) {
    if (name.empty() || !IsFieldValue(value)) {
      result.error = "header '" + Printable(name) + "' has a control character or line break";
      return result;
    }
    for (char c : name) {
      if (!IsTokenChar(c)) {
        result.error = "header name '" + Printable(name) + "' is not an HTTP token";
        return result;
      }
    }
  }
  int64_t deadline = NowMs() + timeout_ms;
  StatusOr<int> connected = Connect(url, deadline, cancel_fd);
  if (!connected.ok()) {
    result.error = connected.status().message();
    return result;
  }
  const int fd = *connected;
  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  if (url.port != 80) host += ":" + std::to_string(url.port);
  std::string head = "POST " + url.path + std::string(path_and_query) + " HTTP/1.1\r\n";
  head += "Host: " + host + "\r\n";
  head += "User-Agent: inprof\r\n";
  head += "Content-Type: " + std::string(content_type) + "\r\n";
  head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  head += "Connection: close\r\n";
  for (const auto& [name, value] : headers) head += name + ": " + value + "\r\n";
  head += "\r\n";
  errno = 0;
  if (!SendAll(fd, head, timeout_ms, cancel_fd) || !SendAll(fd, body, timeout_ms, cancel_fd)) {
    result.error = "sending to " + url.host + ":" + std::to_string(url.port) + " failed: " +
                   (errno == ETIMEDOUT || errno == 0
                        ? "no progress within " + std::to_string(timeout_ms) + " ms"
                        : std::string(std::strerror(errno)));
    close(fd);
    return result;
  }
  // Read the status line and as much of the body as is useful for a message.
  std::string response;
  char buf[4096];
  deadline = NowMs() + timeout_ms;
  bool complete = false;
  for (;;) {
    const int ready = WaitFd(fd, POLLIN, deadline, cancel_fd);
    if (ready != 1) {
      result.error = ready == 0 ? "no response within " + std::to_string(timeout_ms) + " ms"
                     : ready == kCancelled
                         ? std::string("cancelled at stop (the flush time ran out)")
                         : std::string("receive failed: ") + std::strerror(errno);
      break;
    }
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      complete = n == 0;
      if (n < 0) result.error = std::string("receive failed: ") + std::strerror(errno);
      break;
    }
    response.append(buf, static_cast<size_t>(n));
    const size_t head_end = response.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      // Enough once the announced body (or 4 KiB of it) is here.
      size_t want = 4096;
      const std::string lower = Lower(std::string_view(response).substr(0, head_end));
      const size_t cl = lower.find("\r\ncontent-length:");
      if (cl != std::string::npos) {
        size_t value = 0;
        std::string_view digits = TrimSpaces(std::string_view(lower).substr(cl + 17));
        std::from_chars(digits.data(), digits.data() + digits.size(), value);
        want = std::min<size_t>(want, value);
      }
      if (response.size() - head_end - 4 >= want) {
        complete = true;
        break;
      }
    }
    if (response.size() > 64 * 1024) {
      complete = true;
      break;
    }
  }
  close(fd);
  // "HTTP/1.x NNN reason"
  if (response.size() >= 12 && response.compare(0, 7, "HTTP/1.") == 0 && response[8] == ' ') {
    int status = 0;
    auto [p, ec] = std::from_chars(response.data() + 9, response.data() + 12, status);
    if (ec == std::errc() && p == response.data() + 12 && status >= 100 && status <= 599) {
      result.status = status;
      result.error.clear();
      const size_t head_end = response.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        result.body = response.substr(head_end + 4, 4096);
      }
      return result;
    }
  }
  if (result.error.empty()) {
    result.error = complete ? "malformed response from " + url.host : "connection closed early";
  }
  return result;
}

}  // namespace inprof::internal
