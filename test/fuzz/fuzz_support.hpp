// Helpers shared by the fuzz targets: a byte-stream reader that turns the fuzzer's input
// into structured values (like clang's FuzzedDataProvider, which gcc builds lack), the
// paths of the test data, and a property check that aborts so libFuzzer records the input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

namespace genie_fuzz {

/// Reads values from the front of the input; once it is used up every read gives 0 / "".
class Input {
public:
    Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

    size_t remaining() const { return size_ - pos_; }
    bool empty() const { return pos_ >= size_; }

    uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
    uint32_t u32() {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v = (v << 8) | byte();
        return v;
    }
    bool flag() { return (byte() & 1) != 0; }
    /// A value in [0, n) (n > 0).
    uint32_t below(uint32_t n) { return n <= 256 ? byte() % n : u32() % n; }
    /// Up to `max_len` bytes, the length taken from the input.
    std::string_view bytes(size_t max_len) {
        const size_t len = std::min<size_t>(below(static_cast<uint32_t>(max_len) + 1), remaining());
        std::string_view out(reinterpret_cast<const char*>(data_ + pos_), len);
        pos_ += len;
        return out;
    }
    /// Bytes up to the next `sep` (consumed) or the end.
    std::string_view until(char sep) {
        const char* begin = reinterpret_cast<const char*>(data_ + pos_);
        const void* hit = std::memchr(begin, sep, remaining());
        const size_t len = hit ? static_cast<size_t>(static_cast<const char*>(hit) - begin) : remaining();
        pos_ += len + (hit ? 1 : 0);
        return {begin, len};
    }
    /// Everything not read yet.
    std::string_view rest() {
        std::string_view out(reinterpret_cast<const char*>(data_ + pos_), remaining());
        pos_ = size_;
        return out;
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

/// A property the target checks failed: print it and abort, so libFuzzer saves the input
/// and the replay test fails.
[[noreturn]] inline void property_failed(const char* what, std::string_view detail = {}) {
    std::fprintf(stderr, "fuzz property failed: %s\n%.*s\n", what, static_cast<int>(std::min<size_t>(detail.size(), 2000)),
                 detail.data());
    std::abort();
}

/// ../shared/testdata (GENIE_FUZZ_TESTDATA overrides the path compiled in).
inline std::filesystem::path testdata_dir() {
    if (const char* env = std::getenv("GENIE_FUZZ_TESTDATA")) return env;
    return GENIE_TESTDATA_DIR;
}

}  // namespace genie_fuzz
