// Helpers shared by the Catch2 tests: where the test data lives, temp files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace genie::test {

/// ../shared/testdata (absolute), as configured by CMake.
std::filesystem::path testdata_dir();
/// build/fixtures: where tests write generated GGUF files.
std::filesystem::path fixture_dir();
/// build/bin
std::filesystem::path bin_dir();

/// A unique path under fixture_dir() (the file is not created).
std::filesystem::path temp_path(const std::string& stem, const std::string& extension = ".gguf");

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);
void write_file_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);

}  // namespace genie::test
