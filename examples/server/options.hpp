// genie-server: the command line (docs/server.md has the flags).
#pragma once

#include <cstdio>
#include <string>

namespace genie::server {

struct Options {
    std::string model;
    std::string host = "127.0.0.1";
    int port = 8080;
    int ctx = 0;
    int threads = 0;
    std::string api_key;
    int parallel = 1;
};

void usage(std::FILE* out);
/// Throws std::invalid_argument for a bad command line. Warns on stderr when the server
/// would listen beyond loopback without an API key.
Options parse_args(int argc, char** argv, bool& help);
/// An integer from the environment (test hooks and limits), `fallback` when unset or bad.
int env_int(const char* name, int fallback);

}  // namespace genie::server
