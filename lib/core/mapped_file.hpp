// A read-only view of a whole file: mmap'd where possible, so weights are used in
// place (the page cache is the only copy), or an owned byte buffer (tests, fuzzing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace genie {

class MappedFile {
public:
    /// Maps `path` read-only. Throws genie::Error (NotFound / Io) naming the path.
    /// The file stays open, so check_unchanged() can tell when it is truncated under the mapping.
    static MappedFile open(const std::filesystem::path& path);
    /// Reads all of `path` into anonymous memory (page-aligned; llama.cpp's --no-mmap): the
    /// bytes no longer depend on the file. Throws NotFound / Io, OutOfMemory when the memory
    /// cannot be had.
    static MappedFile read(const std::filesystem::path& path);
    /// Wraps bytes already in memory; `name` is used in error messages.
    static MappedFile from_bytes(std::vector<uint8_t> bytes, std::string name);

    MappedFile() = default;
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    const uint8_t* data() const noexcept { return data_; }
    size_t size() const noexcept { return size_; }
    std::span<const uint8_t> bytes() const noexcept { return {data_, size_}; }
    /// The path (or the name given to from_bytes), for messages.
    const std::string& name() const noexcept { return name_; }
    /// True when the bytes are an mmap of the file (not a heap copy).
    bool is_mapped() const noexcept { return mapped_ && fd_ >= 0; }
    /// For a file mapping: throws genie::Error (Io) "... changed on disk ..." when the file
    /// under the mapping was truncated or rewritten since open() (same inode; a file replaced
    /// by rename leaves the mapped one intact and is not a change). A no-op otherwise.
    void check_unchanged() const;

private:
    void release() noexcept;

    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;  // data_ is an mmap (of the file when fd_ >= 0, else anonymous)
    int fd_ = -1;          // the mapped file, kept open for check_unchanged()
    int64_t mtime_ns_ = 0;  // its modification time at open()
    std::vector<uint8_t> owned_;
    std::string name_;
};

}  // namespace genie
