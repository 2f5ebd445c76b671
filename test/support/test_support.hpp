// Helpers shared by the Catch2 tests: where the test data lives, temp files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

// GENIE_TEST_SANITIZED: 1 in an ASan/TSan/MSan build (gcc defines __SANITIZE_*__, clang
// answers __has_feature). Checks that measure RSS or address space skip themselves there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GENIE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define GENIE_TEST_SANITIZED 1
#endif
#endif
#ifndef GENIE_TEST_SANITIZED
#define GENIE_TEST_SANITIZED 0
#endif

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
