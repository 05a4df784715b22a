#include "ddplab/core/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace ddplab {
namespace {

constexpr char kMagic[8] = {'D', 'D', 'P', 'L', 'A', 'B', 'C', 'K'};

std::uint32_t crc_of(const std::vector<float>& v) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(v.data());
  std::size_t left = v.size() * sizeof(float);
  while (left > 0) {  // zlib takes uInt lengths
    const uInt n = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    crc = crc32(crc, p, n);
    p += n, left -= n;
  }
  return static_cast<std::uint32_t>(crc);
}

std::string sys_error(const std::string& path, const char* what) {
  return fmt::format("checkpoint {}: {}: {}", path, what, std::strerror(errno));
}

// Writes all of [data, data + n) to fd.
bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= static_cast<std::size_t>(w);
  }
  return true;
}

void diff(const nlohmann::json& a, const nlohmann::json& b, const std::string& path,
          const std::set<std::string>& ignored, std::vector<std::string>& out) {
  if (ignored.count(path)) return;
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      const std::string sub = path.empty() ? k : path + "." + k;
      if (!a.contains(k) || !b.contains(k)) {
        if (ignored.count(sub)) continue;
        out.push_back(fmt::format("{}: {} in the checkpoint, {} now", sub, a.contains(k) ? a[k].dump() : "absent",
                                  b.contains(k) ? b[k].dump() : "absent"));
        continue;
      }
      diff(a[k], b[k], sub, ignored, out);
    }
    return;
  }
  if (a != b)
    out.push_back(fmt::format("{}: {} in the checkpoint, {} now", path.empty() ? "(value)" : path, a.dump(), b.dump()));
}

}  // namespace

const std::vector<float>& Checkpoint::tensor(const std::string& name, std::size_t count,
                                             const std::string& what) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw CheckpointError(fmt::format("{}: holds no tensor \"{}\"", what, name));
  if (it->second.size() != count)
    throw CheckpointError(
        fmt::format("{}: tensor \"{}\" holds {} values, {} expected", what, name, it->second.size(), count));
  return it->second;
}

std::uint64_t write_checkpoint(const std::string& path, const Checkpoint& c) {
  if (c.meta.contains("tensors")) throw CheckpointError("checkpoint " + path + ": meta must not hold \"tensors\"");
  nlohmann::json head = c.meta;
  head["tensors"] = nlohmann::json::array();
  for (const auto& [name, v] : c.tensors)
    head["tensors"].push_back({{"name", name}, {"count", v.size()}, {"crc32", crc_of(v)}});
  const std::string json = head.dump();

  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw CheckpointError(fmt::format("checkpoint {}: cannot create folder {}: {}", path, dir.string(), ec.message()));
  std::string tmp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw CheckpointError(sys_error(path, "cannot create a temporary file beside it"));
  std::uint64_t bytes = 0;
  auto put = [&](const void* p, std::size_t n) {
    if (!write_all(fd, p, n)) {
      const std::string why = sys_error(path, "write failed");
      ::close(fd);
      ::unlink(tmp.c_str());
      throw CheckpointError(why);
    }
    bytes += n;
  };
  const std::uint32_t version = Checkpoint::kFormatVersion, zero = 0;
  const std::uint64_t json_len = json.size();
  put(kMagic, sizeof kMagic);
  put(&version, sizeof version);
  put(&zero, sizeof zero);
  put(&json_len, sizeof json_len);
  put(json.data(), json.size());
  for (const auto& [name, v] : c.tensors) put(v.data(), v.size() * sizeof(float));
  const bool synced = ::fsync(fd) == 0;
  const std::string sync_error = synced ? "" : sys_error(path, "fsync failed");
  if (::close(fd) != 0 || !synced) {
    const std::string why = synced ? sys_error(path, "close failed") : sync_error;
    ::unlink(tmp.c_str());
    throw CheckpointError(why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = sys_error(path, "rename failed");
    ::unlink(tmp.c_str());
    throw CheckpointError(why);
  }
  // The rename is durable once the folder is.
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return bytes;
}

Checkpoint read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(sys_error(path, "cannot open"));
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  char magic[sizeof kMagic] = {};
  std::uint32_t version = 0, zero = 0;
  std::uint64_t json_len = 0;
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    throw CheckpointError(fmt::format("checkpoint {}: not a ddplab checkpoint (no DDPLABCK header)", path));
  in.read(reinterpret_cast<char*>(&version), sizeof version);
  in.read(reinterpret_cast<char*>(&zero), sizeof zero);
  in.read(reinterpret_cast<char*>(&json_len), sizeof json_len);
  if (!in) throw CheckpointError(fmt::format("checkpoint {}: truncated header", path));
  if (version != Checkpoint::kFormatVersion)
    throw CheckpointError(fmt::format("checkpoint {}: format version {}, this build reads version {}", path, version,
                                      Checkpoint::kFormatVersion));
  const std::uint64_t header = sizeof magic + sizeof version + sizeof zero + sizeof json_len;
  if (json_len > size - header)
    throw CheckpointError(fmt::format("checkpoint {}: truncated (its index runs past the end)", path));
  std::string json(json_len, '\0');
  in.read(json.data(), static_cast<std::streamsize>(json_len));
  Checkpoint c;
  try {
    c.meta = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("checkpoint {}: unreadable index: {}", path, e.what()));
  }
  if (!c.meta.is_object() || !c.meta.contains("tensors") || !c.meta["tensors"].is_array())
    throw CheckpointError(fmt::format("checkpoint {}: its index lists no tensors", path));
  const nlohmann::json index = c.meta["tensors"];
  c.meta.erase("tensors");
  std::uint64_t at = header + json_len;
  for (const auto& t : index) {
    std::string name;
    std::uint64_t count = 0;
    std::uint32_t crc = 0;
    try {
      name = t.at("name").get<std::string>();
      count = t.at("count").get<std::uint64_t>();
      crc = t.at("crc32").get<std::uint32_t>();
    } catch (const nlohmann::json::exception& e) {
      throw CheckpointError(fmt::format("checkpoint {}: bad tensor entry {}: {}", path, t.dump(), e.what()));
    }
    if (count > (size - at) / sizeof(float))
      throw CheckpointError(
          fmt::format("checkpoint {}: truncated: tensor \"{}\" needs {} bytes at offset {}, the file has {}", path,
                      name, count * sizeof(float), at, size));
    std::vector<float> v(count);
    in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
    if (!in) throw CheckpointError(fmt::format("checkpoint {}: read of tensor \"{}\" failed", path, name));
    if (crc_of(v) != crc)
      throw CheckpointError(fmt::format("checkpoint {}: tensor \"{}\" is damaged (CRC-32 mismatch)", path, name));
    at += count * sizeof(float);
    if (!c.tensors.emplace(name, std::move(v)).second)
      throw CheckpointError(fmt::format("checkpoint {}: tensor \"{}\" listed twice", path, name));
  }
  if (at != size) throw CheckpointError(fmt::format("checkpoint {}: {} bytes past its last tensor", path, size - at));
  return c;
}

std::string json_differences(const nlohmann::json& saved, const nlohmann::json& now,
                             const std::set<std::string>& ignored, std::size_t limit) {
  std::vector<std::string> out;
  diff(saved, now, "", ignored, out);
  std::string s;
  for (std::size_t i = 0; i < out.size() && i < limit; ++i) s += (i ? "; " : "") + out[i];
  if (out.size() > limit) s += fmt::format("; and {} more", out.size() - limit);
  return s;
}

}  // namespace ddplab
