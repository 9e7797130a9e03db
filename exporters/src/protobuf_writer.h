// The protobuf wire format, written by hand: profile.proto needs only varints and
// length-delimited fields, and a protobuf library would be a dependency of libinprof.so (and
// of every program it is preloaded into) for a few dozen lines of encoding.
// https://protobuf.dev/programming-guides/encoding/
#ifndef INPROF_EXPORTERS_PROTOBUF_WRITER_H_
#define INPROF_EXPORTERS_PROTOBUF_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inprof::internal {

// Appends fields to a message in a string. Zero-valued scalars are still written when asked:
// callers skip defaults themselves where proto3 would. Not async-signal-safe.
class ProtobufWriter {
 public:
  void Varint(uint32_t field, uint64_t value) {
    Tag(field, 0);
    Raw(value);
  }
  void Signed(uint32_t field, int64_t value) { Varint(field, static_cast<uint64_t>(value)); }
  void Bytes(uint32_t field, std::string_view bytes) {
    Tag(field, 2);
    Raw(bytes.size());
    out_.append(bytes);
  }
  // A repeated scalar field, packed (what proto3 writers emit and every reader accepts).
  template <typename T>
  void Packed(uint32_t field, const std::vector<T>& values) {
    if (values.empty()) return;
    ProtobufWriter body;
    for (T v : values) body.Raw(static_cast<uint64_t>(v));
    Bytes(field, body.out_);
  }
  void Message(uint32_t field, const ProtobufWriter& message) { Bytes(field, message.out_); }

  const std::string& data() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Tag(uint32_t field, uint32_t wire_type) { Raw((uint64_t{field} << 3) | wire_type); }
  void Raw(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }

  std::string out_;
};

}  // namespace inprof::internal

#endif  // INPROF_EXPORTERS_PROTOBUF_WRITER_H_
