#include "support/test_support.hpp"

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace genie::test {

std::filesystem::path testdata_dir() { return GENIE_TESTDATA_DIR; }
std::filesystem::path fixture_dir() { return GENIE_FIXTURE_DIR; }
std::filesystem::path bin_dir() { return GENIE_BIN_DIR; }

std::filesystem::path temp_path(const std::string& stem, const std::string& extension) {
    static std::atomic<int> counter{0};
    return fixture_dir() / (stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + extension);
}

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace genie::test
