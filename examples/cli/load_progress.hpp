// A model-loading progress bar for genie-cli, drawn on stderr only when it is a terminal.
#pragma once

#include <genie/model.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace genie::cli {

/// Loads `path`, showing "loading NAME [#####     ]  50%" on a terminal (nothing otherwise).
inline Model load_with_progress(const std::string& path, ModelOptions options = {}) {
    if (::isatty(STDERR_FILENO)) {
        const std::string name = std::filesystem::path(path).filename().string();
        options.progress = [name](float fraction) {
            constexpr int kWidth = 30;
            const int filled = static_cast<int>(fraction * kWidth + 0.5f);
            fmt::print(stderr, "\rloading {} [{}{}] {:3.0f}%", name, std::string(static_cast<size_t>(filled), '#'),
                       std::string(static_cast<size_t>(kWidth - filled), ' '), fraction * 100.0f);
            if (fraction >= 1.0f) fmt::print(stderr, "\r\x1b[2K");  // done: clear the line
            std::fflush(stderr);
            return true;
        };
    }
    return Model::load(path, options);
}

}  // namespace genie::cli
