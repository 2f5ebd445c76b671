// genie-server: the command line (see options.hpp).
#include "options.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace genie::server {
namespace {

/// The first line of `path`, without its line end (a key file, so the key stays out of `ps`).
std::string read_key_file(const std::string& path) {
    std::ifstream in(path);
    std::string key;
    if (!in || !std::getline(in, key)) throw std::invalid_argument("--api-key-file: cannot read " + path);
    while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (key.empty()) throw std::invalid_argument("--api-key-file: " + path + " starts with an empty line");
    return key;
}

int parse_int_arg(const std::string& flag, const std::string& v, int lo, int hi) {
    size_t used = 0;
    long x = 0;
    try {
        x = std::stol(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != v.size() || v.empty() || x < lo || x > hi)
        throw std::invalid_argument(fmt::format("{} expects an integer in [{}, {}], got '{}'", flag, lo, hi, v));
    return static_cast<int>(x);
}

}  // namespace

void usage(std::FILE* out) {
    fmt::print(out,
               "usage: genie-server -m MODEL.gguf [options]\n"
               "  -m, --model PATH       GGUF model to serve (required)\n"
               "  --host ADDR            address to listen on (default 127.0.0.1, loopback only)\n"
               "  --port N               TCP port (default 8080)\n"
               "  -c, --ctx-size N       context length of each slot (default: min(training context, 4096))\n"
               "  -t, --threads N        CPU threads per generation (default: all)\n"
               "  --api-key KEY          require 'Authorization: Bearer KEY' (default: $GENIE_API_KEY, else none)\n"
               "  --api-key-file PATH    the same, the key read from the file's first line (not shown by ps)\n"
               "  -np, --parallel N      generations that run at once, each with its own KV cache (default 1)\n"
               "  -h, --help             this text\n"
               "Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /health, GET /v1/models,\n"
               "POST /tokenize, POST /detokenize, GET /metrics (docs/server.md).\n");
}

Options parse_args(int argc, char** argv, bool& help) {
    Options o;
    if (const char* key = std::getenv("GENIE_API_KEY")) o.api_key = key;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") help = true;
        else if (a == "-m" || a == "--model") o.model = value();
        else if (a == "--host") o.host = value();
        else if (a == "--port") o.port = parse_int_arg(a, value(), 0, 65535);
        else if (a == "-c" || a == "--ctx-size") o.ctx = parse_int_arg(a, value(), 0, 1 << 24);
        else if (a == "-t" || a == "--threads") o.threads = parse_int_arg(a, value(), 0, 1024);
        else if (a == "--api-key") o.api_key = value();
        else if (a == "--api-key-file") o.api_key = read_key_file(value());
        else if (a == "-np" || a == "--parallel") o.parallel = parse_int_arg(a, value(), 1, 256);
        else throw std::invalid_argument("unknown option " + a);
    }
    if (!help && o.model.empty()) throw std::invalid_argument("-m MODEL is required");
    const bool loopback = o.host == "127.0.0.1" || o.host == "::1" || o.host == "localhost" || o.host.rfind("127.", 0) == 0;
    if (!help && !loopback && o.api_key.empty())
        fmt::print(stderr,
                   "genie-server: warning: listening on {} (not loopback) without an API key: anyone who can reach "
                   "this address can use the server (--api-key-file PATH or $GENIE_API_KEY)\n",
                   o.host);
    return o;
}

int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    try {
        return std::stoi(v);
    } catch (const std::exception&) {
        return fallback;
    }
}

}  // namespace genie::server
