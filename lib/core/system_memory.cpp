#include "core/system_memory.hpp"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

namespace genie::core {

namespace {

namespace fs = std::filesystem;

/// cgroup v1 writes "no limit" as the largest page-aligned counter (about 2^63); v2 as "max".
constexpr uint64_t kNoLimit = uint64_t{1} << 62;

/// The first whitespace-separated token of `path` as an unsigned number (nullopt when the
/// file is missing, or says "max", or holds no number).
std::optional<uint64_t> read_number(const fs::path& path) {
    std::ifstream in(path);
    std::string word;
    if (!(in >> word)) return std::nullopt;
    try {
        size_t used = 0;
        const unsigned long long v = std::stoull(word, &used);
        if (used != word.size()) return std::nullopt;
        return static_cast<uint64_t>(v);
    } catch (...) {
        return std::nullopt;
    }
}

/// The value of `key` in a "key value" file (memory.stat); 0 when absent.
uint64_t stat_value(const fs::path& path, std::string_view key) {
    std::ifstream in(path);
    std::string k;
    uint64_t v = 0;
    while (in >> k >> v)
        if (k == key) return v;
    return 0;
}

/// The file names of one cgroup version.
struct CgroupFiles {
    const char* limit;
    const char* usage;
    const char* inactive_file;  ///< key in memory.stat
};
constexpr CgroupFiles kV2{"memory.max", "memory.current", "inactive_file"};
constexpr CgroupFiles kV1{"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"};

/// Takes the limits of `leaf` and every folder above it up to `mount` into `m`.
void read_cgroup_levels(const fs::path& mount, const fs::path& leaf, const CgroupFiles& files, SystemMemory& m) {
    for (fs::path dir = leaf;; dir = dir.parent_path()) {
        const std::optional<uint64_t> limit = read_number(dir / files.limit);
        if (limit && *limit > 0 && *limit < kNoLimit) {
            const uint64_t usage = read_number(dir / files.usage).value_or(0);
            const uint64_t inactive = stat_value(dir / "memory.stat", files.inactive_file);
            const uint64_t working_set = usage - std::min(usage, inactive);
            const uint64_t headroom = *limit - std::min(*limit, working_set);
            const bool first = m.cgroup_limit == 0;
            m.cgroup_limit = first ? *limit : std::min(m.cgroup_limit, *limit);
            m.cgroup_headroom = first ? headroom : std::min(m.cgroup_headroom, headroom);
        }
        if (dir == mount || dir.parent_path() == dir) break;
    }
}

/// The process's cgroup folder below `mount` for the path `in_cgroup` of /proc/self/cgroup.
/// Inside a container the mount often shows the container's own cgroup as its root, so a
/// path that does not exist there falls back to the mount itself.
fs::path cgroup_dir(const fs::path& mount, const std::string& in_cgroup) {
    fs::path dir = mount;
    for (const fs::path& part : fs::path(in_cgroup).relative_path())
        if (!part.empty() && part != ".") dir /= part;
    std::error_code ec;
    return fs::is_directory(dir, ec) ? dir : mount;
}

void read_cgroups(const fs::path& root, SystemMemory& m) {
    std::ifstream in(root / "proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        // "hierarchy-id:controller-list:path"; v2 is "0::path".
        const size_t a = line.find(':');
        const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string id = line.substr(0, a);
        const std::string controllers = line.substr(a + 1, b - a - 1);
        const std::string path = line.substr(b + 1);
        if (id == "0" && controllers.empty()) {
            const fs::path mount = root / "sys" / "fs" / "cgroup";
            read_cgroup_levels(mount, cgroup_dir(mount, path), kV2, m);
        } else {
            std::stringstream list(controllers);
            std::string c;
            while (std::getline(list, c, ','))
                if (c == "memory") {
                    const fs::path mount = root / "sys" / "fs" / "cgroup" / "memory";
                    read_cgroup_levels(mount, cgroup_dir(mount, path), kV1, m);
                }
        }
    }
}

}  // namespace

uint64_t SystemMemory::usable() const noexcept {
    if (cgroup_limit > 0 && (available == 0 || cgroup_headroom < available)) return cgroup_headroom;
    return available;
}

std::string SystemMemory::usable_source() const {
    if (cgroup_limit > 0 && (available == 0 || cgroup_headroom < available))
        return "cgroup memory limit less its working set";
    return "MemAvailable (/proc/meminfo)";
}

SystemMemory read_system_memory(const std::filesystem::path& root) noexcept {
    SystemMemory m;
    try {
        std::ifstream in(root / "proc/meminfo");
        std::string key;
        uint64_t value = 0;
        std::string unit;
        while (in >> key >> value) {
            std::getline(in, unit);  // " kB"
            if (key == "MemTotal:") m.total = value * 1024;
            if (key == "MemAvailable:") m.available = value * 1024;
        }
        read_cgroups(root, m);
    } catch (...) {
        // Unreadable facts stay 0 (unknown).
    }
    return m;
}

}  // namespace genie::core
