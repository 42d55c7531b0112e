#include "codeact/sandbox/tar_archive.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <map>
#include <optional>

namespace codeact::sandbox {
namespace {

constexpr size_t kBlock = 512;

// ustar field offsets and widths.
constexpr size_t kNameOff = 0, kNameLen = 100;
constexpr size_t kModeOff = 100, kUidOff = 108, kGidOff = 116;
constexpr size_t kSizeOff = 124, kMtimeOff = 136, kChksumOff = 148;
constexpr size_t kTypeOff = 156;
constexpr size_t kLinkOff = 157, kLinkLen = 100;
constexpr size_t kMagicOff = 257;
constexpr size_t kPrefixOff = 345, kPrefixLen = 155;

size_t padded(size_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// Writes `value` as zero-padded octal filling width-1 digits plus a NUL. Returns false if it
// does not fit.
bool put_octal(char* field, size_t width, uint64_t value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + (value & 7)));
    value >>= 3;
  } while (value != 0);
  if (digits.size() > width - 1) return false;
  std::memset(field, '0', width - 1 - digits.size());
  std::memcpy(field + (width - 1 - digits.size()), digits.data(), digits.size());
  field[width - 1] = '\0';
  return true;
}

bool fits_octal(uint64_t value, size_t width) {
  char buf[32];
  return put_octal(buf, width, value);
}

std::string pax_record(std::string_view key, std::string_view value) {
  // "<len> <key>=<value>\n" where len counts the whole record, its own digits included.
  size_t base = 1 + key.size() + 1 + value.size() + 1;
  size_t len = base + 1;
  while (std::to_string(len).size() + base != len) len = std::to_string(len).size() + base;
  return std::to_string(len) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

core::Status check_path(std::string_view path) {
  if (path.empty()) return core::invalid_argument("tar: empty entry path");
  if (path.front() == '/') {
    return core::invalid_argument("tar: entry path \"" + std::string(path) + "\" is absolute");
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") {
      return core::invalid_argument("tar: entry path \"" + std::string(path) +
                                    "\" leaves the archive root (..)");
    }
    start = end + 1;
  }
  return core::ok_status();
}

std::string normalize_path(std::string path) {
  while (!path.empty() && path.front() == '/') path.erase(0, 1);
  while (path.rfind("./", 0) == 0) path.erase(0, 2);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty() || path == "/") return ".";
  return path;
}

std::optional<uint64_t> parse_number(const char* field, size_t width) {
  auto byte = static_cast<unsigned char>(field[0]);
  if (byte & 0x80) {
    // GNU base-256: big-endian, first byte's top bit is the marker.
    uint64_t v = byte & 0x7f;
    for (size_t i = 1; i < width; ++i) v = (v << 8) | static_cast<unsigned char>(field[i]);
    return v;
  }
  uint64_t v = 0;
  size_t i = 0;
  while (i < width && (field[i] == ' ' || field[i] == '\0')) {
    if (field[i] == '\0' && i + 1 < width && field[i + 1] == '\0') return 0;  // empty field
    ++i;
  }
  bool any = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    v = (v << 3) | static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  if (!any) return 0;
  return v;
}

uint64_t to_u64(const std::string& s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

std::string field_string(const char* field, size_t width) {
  size_t n = 0;
  while (n < width && field[n] != '\0') ++n;
  return std::string(field, n);
}

core::Status parse_pax(std::string_view data, std::map<std::string, std::string>* out) {
  size_t pos = 0;
  while (pos < data.size()) {
    if (data[pos] == '\0') break;
    size_t space = data.find(' ', pos);
    if (space == std::string_view::npos) return core::data_loss("tar: malformed PAX record");
    size_t len = 0;
    for (size_t i = pos; i < space; ++i) {
      if (data[i] < '0' || data[i] > '9') return core::data_loss("tar: malformed PAX length");
      len = len * 10 + static_cast<size_t>(data[i] - '0');
    }
    if (len == 0 || pos + len > data.size()) return core::data_loss("tar: PAX record overruns");
    std::string_view record = data.substr(space + 1, pos + len - space - 2);  // no trailing \n
    size_t eq = record.find('=');
    if (eq != std::string_view::npos) {
      (*out)[std::string(record.substr(0, eq))] = std::string(record.substr(eq + 1));
    }
    pos += len;
  }
  return core::ok_status();
}

}  // namespace

void TarWriter::write_header(const TarEntry& entry, std::string_view data) {
  std::string name = entry.path;
  if (entry.type == TarEntryType::kDirectory) name += '/';

  std::array<char, kBlock> h{};
  std::string pax;
  // Name: plain, or split into prefix + name at a '/', or a PAX "path" record.
  if (name.size() <= kNameLen) {
    std::memcpy(h.data() + kNameOff, name.data(), name.size());
  } else {
    bool split = false;
    for (size_t slash = name.find('/'); slash != std::string::npos;
         slash = name.find('/', slash + 1)) {
      if (slash <= kPrefixLen && name.size() - slash - 1 <= kNameLen && slash + 1 < name.size()) {
        std::memcpy(h.data() + kPrefixOff, name.data(), slash);
        std::memcpy(h.data() + kNameOff, name.data() + slash + 1, name.size() - slash - 1);
        split = true;
        break;
      }
    }
    if (!split) {
      pax += pax_record("path", name);
      std::string shortname = name.substr(0, kNameLen);
      std::memcpy(h.data() + kNameOff, shortname.data(), shortname.size());
    }
  }
  if (entry.link_target.size() > kLinkLen) {
    pax += pax_record("linkpath", entry.link_target);
  } else {
    std::memcpy(h.data() + kLinkOff, entry.link_target.data(), entry.link_target.size());
  }
  uint64_t size = entry.type == TarEntryType::kFile ? data.size() : 0;
  if (!fits_octal(size, 12)) pax += pax_record("size", std::to_string(size));
  if (!fits_octal(entry.uid, 8)) pax += pax_record("uid", std::to_string(entry.uid));
  if (!fits_octal(entry.gid, 8)) pax += pax_record("gid", std::to_string(entry.gid));

  if (!pax.empty()) {
    TarEntry pax_entry;
    std::string base = entry.path.substr(entry.path.rfind('/') + 1);
    pax_entry.path = "PaxHeaders.0/" + base.substr(0, 80);
    pax_entry.mtime = entry.mtime;
    std::array<char, kBlock> ph{};
    std::memcpy(ph.data() + kNameOff, pax_entry.path.data(), pax_entry.path.size());
    put_octal(ph.data() + kModeOff, 8, 0644);
    put_octal(ph.data() + kUidOff, 8, 0);
    put_octal(ph.data() + kGidOff, 8, 0);
    put_octal(ph.data() + kSizeOff, 12, pax.size());
    put_octal(ph.data() + kMtimeOff, 12, static_cast<uint64_t>(std::max<int64_t>(entry.mtime, 0)));
    ph[kTypeOff] = 'x';
    std::memcpy(ph.data() + kMagicOff,
                "ustar\0"
                "00",
                8);
    std::memset(ph.data() + kChksumOff, ' ', 8);
    unsigned sum = 0;
    for (char c : ph) sum += static_cast<unsigned char>(c);
    put_octal(ph.data() + kChksumOff, 7, sum);
    ph[kChksumOff + 7] = ' ';
    out_.append(ph.data(), ph.size());
    out_.append(pax);
    out_.append(padded(pax.size()) - pax.size(), '\0');
  }

  put_octal(h.data() + kModeOff, 8, entry.mode & 07777);
  if (!put_octal(h.data() + kUidOff, 8, entry.uid)) put_octal(h.data() + kUidOff, 8, 0);
  if (!put_octal(h.data() + kGidOff, 8, entry.gid)) put_octal(h.data() + kGidOff, 8, 0);
  if (!put_octal(h.data() + kSizeOff, 12, size)) put_octal(h.data() + kSizeOff, 12, 0);
  put_octal(h.data() + kMtimeOff, 12, static_cast<uint64_t>(std::max<int64_t>(entry.mtime, 0)));
  char type = '0';
  switch (entry.type) {
    case TarEntryType::kFile:
      type = '0';
      break;
    case TarEntryType::kDirectory:
      type = '5';
      break;
    case TarEntryType::kSymlink:
      type = '2';
      break;
    case TarEntryType::kHardLink:
      type = '1';
      break;
    case TarEntryType::kOther:
      type = '0';
      break;
  }
  h[kTypeOff] = type;
  std::memcpy(h.data() + kMagicOff,
              "ustar\0"
              "00",
              8);
  std::memset(h.data() + kChksumOff, ' ', 8);
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  put_octal(h.data() + kChksumOff, 7, sum);
  h[kChksumOff + 7] = ' ';
  out_.append(h.data(), h.size());
  if (size > 0) {
    out_.append(data);
    out_.append(padded(data.size()) - data.size(), '\0');
  }
}

core::Status TarWriter::add(const TarEntry& entry) {
  if (entry.type == TarEntryType::kOther) {
    return core::invalid_argument("tar: cannot write entry \"" + entry.path + "\" of other type");
  }
  TarEntry e = entry;
  while (e.path.size() > 1 && e.path.back() == '/') e.path.pop_back();
  while (e.path.rfind("./", 0) == 0) e.path.erase(0, 2);
  CODEACT_TRY_STATUS(check_path(e.path));
  write_header(e, e.data);
  return core::ok_status();
}

core::Status TarWriter::add_file(std::string_view path, std::string_view data, uint32_t mode,
                                 uint32_t uid, uint32_t gid) {
  TarEntry e;
  e.path = std::string(path);
  e.type = TarEntryType::kFile;
  e.mode = mode;
  e.uid = uid;
  e.gid = gid;
  CODEACT_TRY_STATUS(check_path(e.path));
  write_header(e, data);
  return core::ok_status();
}

core::Status TarWriter::add_directory(std::string_view path, uint32_t mode, uint32_t uid,
                                      uint32_t gid) {
  TarEntry e;
  e.path = std::string(path);
  e.type = TarEntryType::kDirectory;
  e.mode = mode;
  e.uid = uid;
  e.gid = gid;
  return add(e);
}

core::Status TarWriter::add_symlink(std::string_view path, std::string_view target, uint32_t uid,
                                    uint32_t gid) {
  TarEntry e;
  e.path = std::string(path);
  e.type = TarEntryType::kSymlink;
  e.link_target = std::string(target);
  e.mode = 0777;
  e.uid = uid;
  e.gid = gid;
  return add(e);
}

std::string TarWriter::finish() {
  out_.append(2 * kBlock, '\0');
  std::string result = std::move(out_);
  out_.clear();
  return result;
}

core::Result<std::string> write_tar(const std::vector<TarEntry>& entries) {
  TarWriter writer;
  for (const auto& e : entries) CODEACT_TRY_STATUS(writer.add(e));
  return writer.finish();
}

core::Result<std::vector<TarEntry>> read_tar(std::string_view archive) {
  std::vector<TarEntry> entries;
  std::map<std::string, std::string> pax;  // applies to the next entry
  std::optional<std::string> gnu_long_name, gnu_long_link;
  size_t pos = 0;
  while (true) {
    if (pos + kBlock > archive.size()) {
      if (pos == archive.size() && !entries.empty()) break;  // no end marker; accept
      if (pos == archive.size()) break;
      return core::data_loss("tar: archive truncated at byte " + std::to_string(pos));
    }
    const char* h = archive.data() + pos;
    bool zero = std::all_of(h, h + kBlock, [](char c) { return c == '\0'; });
    if (zero) break;  // end of archive

    unsigned sum_unsigned = 0;
    int sum_signed = 0;
    for (size_t i = 0; i < kBlock; ++i) {
      char c = (i >= kChksumOff && i < kChksumOff + 8) ? ' ' : h[i];
      sum_unsigned += static_cast<unsigned char>(c);
      sum_signed += static_cast<signed char>(c);
    }
    auto stored = parse_number(h + kChksumOff, 8);
    if (!stored || (*stored != sum_unsigned && static_cast<int64_t>(*stored) != sum_signed)) {
      return core::data_loss("tar: bad header checksum at byte " + std::to_string(pos));
    }

    uint64_t size = parse_number(h + kSizeOff, 12).value_or(0);
    char type = h[kTypeOff];
    if (pax.count("size")) size = to_u64(pax["size"]);
    size_t data_start = pos + kBlock;
    bool has_data = type == '0' || type == '\0' || type == '7' || type == 'x' || type == 'g' ||
                    type == 'L' || type == 'K';
    if (!has_data && type != '5' && type != '2' && type != '1') has_data = size > 0;
    uint64_t data_size = has_data ? size : 0;
    if (data_start + data_size > archive.size()) {
      return core::data_loss("tar: entry at byte " + std::to_string(pos) + " is truncated");
    }
    std::string_view data = archive.substr(data_start, data_size);
    pos = data_start + padded(data_size);

    if (type == 'x') {
      CODEACT_TRY_STATUS(parse_pax(data, &pax));
      continue;
    }
    if (type == 'g') continue;
    if (type == 'L') {
      gnu_long_name = field_string(data.data(), data.size());
      continue;
    }
    if (type == 'K') {
      gnu_long_link = field_string(data.data(), data.size());
      continue;
    }

    TarEntry e;
    std::string name = field_string(h + kNameOff, kNameLen);
    bool posix = std::memcmp(h + kMagicOff, "ustar\0", 6) == 0;
    if (posix) {
      std::string prefix = field_string(h + kPrefixOff, kPrefixLen);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    if (gnu_long_name) name = *gnu_long_name;
    if (pax.count("path")) name = pax["path"];
    e.path = normalize_path(name);
    e.link_target = field_string(h + kLinkOff, kLinkLen);
    if (gnu_long_link) e.link_target = *gnu_long_link;
    if (pax.count("linkpath")) e.link_target = pax["linkpath"];
    e.mode = static_cast<uint32_t>(parse_number(h + kModeOff, 8).value_or(0) & 07777);
    e.uid = static_cast<uint32_t>(parse_number(h + kUidOff, 8).value_or(0));
    e.gid = static_cast<uint32_t>(parse_number(h + kGidOff, 8).value_or(0));
    if (pax.count("uid")) e.uid = static_cast<uint32_t>(to_u64(pax["uid"]));
    if (pax.count("gid")) e.gid = static_cast<uint32_t>(to_u64(pax["gid"]));
    e.mtime = static_cast<int64_t>(parse_number(h + kMtimeOff, 12).value_or(0));
    if (pax.count("mtime"))
      e.mtime = static_cast<int64_t>(to_u64(pax["mtime"].substr(0, pax["mtime"].find('.'))));
    switch (type) {
      case '0':
      case '\0':
      case '7':
        e.type = TarEntryType::kFile;
        e.data = std::string(data);
        break;
      case '5':
        e.type = TarEntryType::kDirectory;
        break;
      case '2':
        e.type = TarEntryType::kSymlink;
        break;
      case '1':
        e.type = TarEntryType::kHardLink;
        break;
      default:
        e.type = TarEntryType::kOther;
        break;
    }
    // Old tars mark directories only by a trailing slash.
    if (e.type == TarEntryType::kFile && name.size() > 1 && name.back() == '/' && data.empty()) {
      e.type = TarEntryType::kDirectory;
    }
    entries.push_back(std::move(e));
    pax.clear();
    gnu_long_name.reset();
    gnu_long_link.reset();
  }
  return entries;
}

}  // namespace codeact::sandbox
