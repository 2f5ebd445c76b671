// The host's memory as this process sees it: /proc/meminfo and the memory limit of the
// process's cgroup (v2 memory.max, v1 memory.limit_in_bytes), read in this one place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace genie::core {

struct SystemMemory {
    uint64_t total = 0;      ///< MemTotal in bytes; 0 when unknown
    uint64_t available = 0;  ///< MemAvailable in bytes; 0 when unknown
    /// The tightest cgroup limit on this process (the smallest limit of its cgroup and the
    /// cgroups above it); 0 when none is set or none can be read.
    uint64_t cgroup_limit = 0;
    /// Headroom under the cgroup limits: the smallest (limit - working set) over the
    /// limited levels, the working set being usage minus inactive file pages (the page
    /// cache the kernel reclaims before it fails an allocation). Meaningful when
    /// cgroup_limit > 0.
    uint64_t cgroup_headroom = 0;

    /// Bytes this process can still allocate: MemAvailable, or the cgroup headroom when it
    /// is smaller. 0 when neither is known.
    uint64_t usable() const noexcept;
    /// Where usable() comes from: "MemAvailable (/proc/meminfo)" or
    /// "cgroup memory limit (<limit> - working set)".
    std::string usable_source() const;
};

/// Reads the files below `root` ("/" on a live system; tests pass a folder that mirrors
/// proc/meminfo, proc/self/cgroup and sys/fs/cgroup/...). Never throws: what cannot be
/// read is left 0.
SystemMemory read_system_memory(const std::filesystem::path& root = "/") noexcept;

}  // namespace genie::core
