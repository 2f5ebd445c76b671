#include "core/mapped_file.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace genie {

namespace {

// Opens `path` read-only and checks it is a regular file; the caller owns the descriptor.
int open_regular_file(const std::filesystem::path& path, const std::string& name, struct stat& st) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        throw Error(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                    fmt::format("{}: cannot open: {}", name, std::strerror(err)));
    }
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(ErrorCode::Io, fmt::format("{}: cannot stat: {}", name, std::strerror(err)));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(ErrorCode::InvalidArgument, fmt::format("{}: not a regular file", name));
    }
    return fd;
}

}  // namespace

MappedFile MappedFile::open(const std::filesystem::path& path) {
    MappedFile file;
    file.name_ = path.string();
    struct stat st {};
    const int fd = open_regular_file(path, file.name_, st);
    file.size_ = static_cast<size_t>(st.st_size);
    if (file.size_ > 0) {
        void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (addr == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw Error(err == ENOMEM ? ErrorCode::OutOfMemory : ErrorCode::Io,
                        fmt::format("{}: cannot map {} bytes: {}", file.name_, file.size_, std::strerror(err)));
        }
#ifdef MADV_HUGEPAGE
        // Read-ahead then fills the page cache with 2 MiB folios where the kernel and file
        // system have them (Linux 6.x, ext4/xfs), so decode's weight stream is all on 2 MiB pages
        // (/proc/PID/smaps FilePmdMapped; docs/performance-history.md). Advice only: a kernel without
        // file THP ignores it.
        ::madvise(addr, file.size_, MADV_HUGEPAGE);
#endif
        file.data_ = static_cast<const uint8_t*>(addr);
        file.mapped_ = true;
        file.fd_ = fd;  // kept open: check_unchanged() looks at this inode
        file.mtime_ns_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
        return file;
    }
    ::close(fd);
    return file;
}

MappedFile MappedFile::read(const std::filesystem::path& path) {
    MappedFile file;
    file.name_ = path.string();
    struct stat st {};
    const int fd = open_regular_file(path, file.name_, st);
    const size_t size = static_cast<size_t>(st.st_size);
    if (size > 0) {
        void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (addr == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw Error(ErrorCode::OutOfMemory,
                        fmt::format("{}: cannot allocate {} bytes to read the file into: {}", file.name_, size, std::strerror(err)));
        }
        file.data_ = static_cast<const uint8_t*>(addr);
        file.size_ = size;
        file.mapped_ = true;  // anonymous (fd_ stays -1)
        auto* out = static_cast<uint8_t*>(addr);
        for (size_t done = 0; done < size;) {
            const ssize_t n = ::pread(fd, out + done, std::min<size_t>(size - done, size_t{1} << 30), static_cast<off_t>(done));
            if (n <= 0) {
                const int err = n < 0 ? errno : 0;
                ::close(fd);
                throw Error(ErrorCode::Io, fmt::format("{}: read failed at byte {} of {}: {}", file.name_, done, size,
                                                       err ? std::strerror(err) : "the file became shorter"));
            }
            done += static_cast<size_t>(n);
        }
        ::mprotect(addr, size, PROT_READ);
    }
    ::close(fd);
    return file;
}

void MappedFile::check_unchanged() const {
    if (fd_ < 0) return;
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
        const int err = errno;
        throw Error(ErrorCode::Io, fmt::format("{}: cannot stat the model file: {}", name_, std::strerror(err)));
    }
    const int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (static_cast<uint64_t>(st.st_size) != size_ || mtime != mtime_ns_)
        throw Error(ErrorCode::Io, fmt::format("{}: model file changed on disk since it was loaded (size {} -> {} bytes{}); "
                                               "load it again (or load with use_mmap = false to be immune)",
                                               name_, size_, st.st_size, mtime != mtime_ns_ ? ", modified" : ""));
}

MappedFile MappedFile::from_bytes(std::vector<uint8_t> bytes, std::string name) {
    MappedFile file;
    file.owned_ = std::move(bytes);
    file.data_ = file.owned_.data();
    file.size_ = file.owned_.size();
    file.name_ = std::move(name);
    return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        release();
        mapped_ = std::exchange(other.mapped_, false);
        fd_ = std::exchange(other.fd_, -1);
        mtime_ns_ = other.mtime_ns_;
        size_ = std::exchange(other.size_, 0);
        name_ = std::move(other.name_);
        owned_ = std::move(other.owned_);
        data_ = std::exchange(other.data_, nullptr);
        if (!mapped_) data_ = owned_.data();  // a moved vector keeps its buffer
    }
    return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() noexcept {
    if (mapped_ && data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    data_ = nullptr;
    size_ = 0;
    mapped_ = false;
    owned_.clear();
}

}  // namespace genie
