#include "core/mapped_file.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace genie {

MappedFile MappedFile::open(const std::filesystem::path& path) {
    MappedFile file;
    file.name_ = path.string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        throw Error(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                    fmt::format("{}: cannot open: {}", file.name_, std::strerror(err)));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(ErrorCode::Io, fmt::format("{}: cannot stat: {}", file.name_, std::strerror(err)));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(ErrorCode::InvalidArgument, fmt::format("{}: not a regular file", file.name_));
    }
    file.size_ = static_cast<size_t>(st.st_size);
    if (file.size_ > 0) {
        void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (addr == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw Error(err == ENOMEM ? ErrorCode::OutOfMemory : ErrorCode::Io,
                        fmt::format("{}: cannot map {} bytes: {}", file.name_, file.size_, std::strerror(err)));
        }
        file.data_ = static_cast<const uint8_t*>(addr);
        file.mapped_ = true;
    }
    ::close(fd);  // the mapping keeps the file alive
    return file;
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
    data_ = nullptr;
    size_ = 0;
    mapped_ = false;
    owned_.clear();
}

}  // namespace genie
