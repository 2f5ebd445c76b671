// Helper for bench/tokenizer_compare.py.
//
//   genie_tokenize_file MODEL.gguf --speed TEXT_FILE [--repeat N]
//       tokenizes the whole file N times; prints JSON {"tokens", "seconds", "load_seconds"}
//       (best of N) and writes the ids to TEXT_FILE.ids (one line, space separated).
//   genie_tokenize_file MODEL.gguf --vectors INP_FILE [--add-special] [--parse-special]
//       INP_FILE in llama.cpp's .inp format; prints the .out format (" id id" per line).
//   genie_tokenize_file MODEL.gguf --detokenize IDS_FILE [--remove-special] [--render-special]
//       IDS_FILE: one line of ids per text; prints each text's bytes as hex, one per line,
//       then each token's piece (render_special as given) as hex, space separated.
#include "tokenizer/tokenizer_internal.hpp"

#include <genie/tokenizer.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>
#include <string>

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf (--speed FILE [--repeat N] | --vectors FILE)\n", argv[0]);
        return 2;
    }
    const std::string mode = argv[2];
    const std::string path = argv[3];
    int repeat = 3;
    genie::TokenizeOptions options;
    genie::DetokenizeOptions detok;
    for (int i = 4; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--repeat" && i + 1 < argc) repeat = std::stoi(argv[++i]);
        else if (a == "--add-special") options.add_special = true;
        else if (a == "--parse-special") options.parse_special = true;
        else if (a == "--remove-special") detok.remove_special = true;
        else if (a == "--render-special") detok.render_special = true;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot open %s\n", path.c_str());
        return 1;
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
        const auto t0 = std::chrono::steady_clock::now();
        const genie::Tokenizer tok = genie::Tokenizer::load(argv[1]);
        const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (mode == "--speed") {
            double best = 1e30;
            std::vector<genie::TokenId> ids;
            for (int r = 0; r < repeat; ++r) {
                const auto a = std::chrono::steady_clock::now();
                ids = tok.tokenize(text, options);
                best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
            }
            std::ofstream out(path + ".ids");
            for (size_t i = 0; i < ids.size(); ++i) out << (i ? " " : "") << ids[i];
            out << "\n";
            std::printf("{\"tokens\": %zu, \"seconds\": %.6f, \"load_seconds\": %.6f}\n", ids.size(), best, load_s);
        } else if (mode == "--detokenize") {
            auto hex = [](std::string_view b) {
                static const char* d = "0123456789abcdef";
                std::string h;
                for (unsigned char c : b) h += {d[c >> 4], d[c & 15]};
                return h;
            };
            std::istringstream lines(text);
            std::string line, out;
            while (std::getline(lines, line)) {
                std::istringstream is(line);
                std::vector<genie::TokenId> ids;
                for (genie::TokenId id; is >> id;) ids.push_back(id);
                out += hex(tok.detokenize(ids, detok)) + "\t";
                for (genie::TokenId id : ids) out += hex(tok.token_to_piece(id, detok.render_special)) + " ";
                out += "\n";
            }
            std::fwrite(out.data(), 1, out.size(), stdout);
        } else {
            const std::string sep = "\n__ggml_vocab_test__\n";
            size_t pos = 0;
            std::string out;
            for (size_t hit; (hit = text.find(sep, pos)) != std::string::npos; pos = hit + sep.size()) {
                for (genie::TokenId id : tok.tokenize(std::string_view(text).substr(pos, hit - pos), options))
                    out += " " + std::to_string(id);
                out += "\n";
            }
            std::fwrite(out.data(), 1, out.size(), stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
