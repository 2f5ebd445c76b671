// core::read_system_memory over sample /proc and /sys/fs/cgroup trees in a temporary folder.
#include "core/system_memory.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

using namespace genie;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

/// A fresh folder that mirrors the files the reader looks at; removed at the end.
struct FakeRoot {
    fs::path dir;
    FakeRoot() {
        std::random_device rd;
        dir = fs::temp_directory_path() / ("genie-sysmem-" + std::to_string(rd()) + std::to_string(rd()));
        fs::create_directories(dir);
    }
    ~FakeRoot() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    void write(const std::string& relative, const std::string& text) const {
        const fs::path p = dir / relative;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
    /// MemTotal 8 GiB, MemAvailable 6 GiB (in kB, as the kernel writes them).
    void meminfo() const {
        write("proc/meminfo",
              "MemTotal:        8388608 kB\nMemFree:         1048576 kB\nMemAvailable:    6291456 kB\nBuffers:  100 kB\n");
    }
};

}  // namespace

TEST_CASE("system memory: MemTotal and MemAvailable from /proc/meminfo, no cgroup limit", "[system_memory]") {
    FakeRoot root;
    root.meminfo();
    root.write("proc/self/cgroup", "0::/\n");
    root.write("sys/fs/cgroup/memory.max", "max\n");  // v2, unlimited
    root.write("sys/fs/cgroup/memory.current", "123456789\n");
    const core::SystemMemory m = core::read_system_memory(root.dir);
    CHECK(m.total == 8192 * kMiB);
    CHECK(m.available == 6144 * kMiB);
    CHECK(m.cgroup_limit == 0);
    CHECK(m.usable() == 6144 * kMiB);
    CHECK(m.usable_source() == "MemAvailable (/proc/meminfo)");
}

TEST_CASE("system memory: a cgroup v2 memory.max below MemAvailable bounds what is usable", "[system_memory]") {
    FakeRoot root;
    root.meminfo();
    root.write("proc/self/cgroup", "0::/user.slice/app.scope\n");
    const std::string leaf = "sys/fs/cgroup/user.slice/app.scope/";
    root.write(leaf + "memory.max", std::to_string(2048 * kMiB) + "\n");
    root.write(leaf + "memory.current", std::to_string(1024 * kMiB) + "\n");
    // 256 MiB of the usage is inactive page cache: reclaimable, not part of the working set.
    root.write(leaf + "memory.stat", "anon 100\nfile 500\ninactive_file " + std::to_string(256 * kMiB) + "\nactive_file 7\n");
    const core::SystemMemory m = core::read_system_memory(root.dir);
    CHECK(m.cgroup_limit == 2048 * kMiB);
    CHECK(m.cgroup_headroom == (2048 - 1024 + 256) * kMiB);
    CHECK(m.usable() == (2048 - 1024 + 256) * kMiB);
    CHECK(m.usable_source().find("cgroup") != std::string::npos);
}

TEST_CASE("system memory: the tightest limit of the cgroup and its parents wins", "[system_memory]") {
    FakeRoot root;
    root.meminfo();
    root.write("proc/self/cgroup", "0::/outer/inner\n");
    root.write("sys/fs/cgroup/outer/memory.max", std::to_string(1024 * kMiB));
    root.write("sys/fs/cgroup/outer/memory.current", std::to_string(900 * kMiB));
    root.write("sys/fs/cgroup/outer/inner/memory.max", std::to_string(4096 * kMiB));
    root.write("sys/fs/cgroup/outer/inner/memory.current", std::to_string(800 * kMiB));
    const core::SystemMemory m = core::read_system_memory(root.dir);
    CHECK(m.cgroup_limit == 1024 * kMiB);
    CHECK(m.cgroup_headroom == 124 * kMiB);
    CHECK(m.usable() == 124 * kMiB);
}

TEST_CASE("system memory: cgroup v1 memory.limit_in_bytes, and its 'unlimited' value", "[system_memory]") {
    FakeRoot root;
    root.meminfo();
    root.write("proc/self/cgroup", "12:pids:/docker/abc\n4:cpu,memory:/docker/abc\n1:name=systemd:/docker/abc\n");
    root.write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", std::to_string(512 * kMiB));
    root.write("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", std::to_string(128 * kMiB));
    root.write("sys/fs/cgroup/memory/docker/abc/memory.stat", "cache 5\ntotal_inactive_file " + std::to_string(64 * kMiB) + "\n");
    core::SystemMemory m = core::read_system_memory(root.dir);
    CHECK(m.cgroup_limit == 512 * kMiB);
    CHECK(m.usable() == (512 - 128 + 64) * kMiB);

    // The container's own cgroup mounted as the root (its path does not exist there), no limit.
    FakeRoot container;
    container.meminfo();
    container.write("proc/self/cgroup", "4:memory:/process_api/xyz\n");
    container.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    container.write("sys/fs/cgroup/memory/memory.usage_in_bytes", "4931543040\n");
    m = core::read_system_memory(container.dir);
    CHECK(m.cgroup_limit == 0);
    CHECK(m.usable() == 6144 * kMiB);

    // The same, limited.
    container.write("sys/fs/cgroup/memory/memory.limit_in_bytes", std::to_string(1024 * kMiB));
    container.write("sys/fs/cgroup/memory/memory.usage_in_bytes", std::to_string(1000 * kMiB));
    m = core::read_system_memory(container.dir);
    CHECK(m.cgroup_limit == 1024 * kMiB);
    CHECK(m.usable() == 24 * kMiB);
}

TEST_CASE("system memory: missing or malformed files read as unknown (0), never an error", "[system_memory]") {
    FakeRoot empty;
    core::SystemMemory m = core::read_system_memory(empty.dir);
    CHECK(m.total == 0);
    CHECK(m.available == 0);
    CHECK(m.usable() == 0);

    FakeRoot bad;
    bad.write("proc/meminfo", "MemTotal: lots\n");
    bad.write("proc/self/cgroup", "garbage\n0::/\n");
    bad.write("sys/fs/cgroup/memory.max", "12abc\n");
    m = core::read_system_memory(bad.dir);
    CHECK(m.available == 0);
    CHECK(m.cgroup_limit == 0);

    // A limit with no MemAvailable: the headroom is what is usable.
    FakeRoot limited;
    limited.write("proc/self/cgroup", "0::/\n");
    limited.write("sys/fs/cgroup/memory.max", std::to_string(300 * kMiB));
    m = core::read_system_memory(limited.dir);
    CHECK(m.usable() == 300 * kMiB);
}

TEST_CASE("system memory: this machine reports MemTotal and MemAvailable", "[system_memory]") {
    const core::SystemMemory m = core::read_system_memory();
    CHECK(m.total > 0);
    CHECK(m.available > 0);
    CHECK(m.available <= m.total);
    CHECK(m.usable() > 0);
}
