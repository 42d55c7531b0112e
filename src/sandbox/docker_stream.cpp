#include "docker_stream_internal.hpp"

namespace codeact::sandbox {

void JsonMessageStream::feed(std::string_view chunk) {
  buffer_.append(chunk);
  size_t start = 0;
  for (size_t nl = buffer_.find('\n', start); nl != std::string::npos;
       nl = buffer_.find('\n', start)) {
    emit(std::string_view(buffer_).substr(start, nl - start));
    start = nl + 1;
  }
  buffer_.erase(0, start);
}

void JsonMessageStream::finish() {
  if (!buffer_.empty()) emit(buffer_);
  buffer_.clear();
}

void JsonMessageStream::emit(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.empty()) return;
  auto parsed = core::parse_json(line);
  if (parsed.ok() && parsed->is_object()) {
    on_message_(*parsed);
  } else {
    on_message_(core::Json{{"stream", std::string(line) + "\n"}});
  }
}

void LineAssembler::feed(std::string_view text) {
  buffer_.append(text);
  size_t start = 0;
  for (size_t nl = buffer_.find('\n', start); nl != std::string::npos;
       nl = buffer_.find('\n', start)) {
    std::string_view line = std::string_view(buffer_).substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    on_line_(line);
    start = nl + 1;
  }
  buffer_.erase(0, start);
}

void LineAssembler::finish() {
  if (!buffer_.empty()) on_line_(buffer_);
  buffer_.clear();
}

void demultiplex(std::string_view data, std::string* out, std::string* err) {
  // Check the whole input is well-formed frames before trusting it.
  size_t pos = 0;
  bool framed = !data.empty();
  while (framed && pos < data.size()) {
    if (pos + 8 > data.size()) {
      framed = false;
      break;
    }
    auto type = static_cast<unsigned char>(data[pos]);
    if (type > 2 || data[pos + 1] != 0 || data[pos + 2] != 0 || data[pos + 3] != 0) {
      framed = false;
      break;
    }
    size_t size = (static_cast<size_t>(static_cast<unsigned char>(data[pos + 4])) << 24) |
                  (static_cast<size_t>(static_cast<unsigned char>(data[pos + 5])) << 16) |
                  (static_cast<size_t>(static_cast<unsigned char>(data[pos + 6])) << 8) |
                  static_cast<size_t>(static_cast<unsigned char>(data[pos + 7]));
    if (pos + 8 + size > data.size()) {
      framed = false;
      break;
    }
    pos += 8 + size;
  }
  if (!framed) {
    out->append(data);
    return;
  }
  pos = 0;
  while (pos < data.size()) {
    auto type = static_cast<unsigned char>(data[pos]);
    size_t size = (static_cast<size_t>(static_cast<unsigned char>(data[pos + 4])) << 24) |
                  (static_cast<size_t>(static_cast<unsigned char>(data[pos + 5])) << 16) |
                  (static_cast<size_t>(static_cast<unsigned char>(data[pos + 6])) << 8) |
                  static_cast<size_t>(static_cast<unsigned char>(data[pos + 7]));
    (type == 2 ? err : out)->append(data.substr(pos + 8, size));
    pos += 8 + size;
  }
}

}  // namespace codeact::sandbox
