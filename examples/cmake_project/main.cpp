// Greedy continuation of a prompt through the installed C++ API.
#include <genie/genie.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: consumer_cpp MODEL PROMPT\n");
        return 2;
    }
    try {
        const genie::Model model = genie::Model::load(argv[1]);
        genie::Session session(model);
        genie::Sampler greedy;
        genie::GenerateOptions options;
        options.max_tokens = 16;
        const auto result = session.generate(argv[2], greedy, options);
        std::printf("%s\n", result.text.c_str());
        return 0;
    } catch (const genie::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
