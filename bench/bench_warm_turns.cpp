// Warm turns through genie::Engine: time to first token of a conversation's first turn
// (cold: the ~300-token system prompt and the user's ~20 tokens are evaluated) against
// its follow-up turn (warm: the conversation's session still holds the earlier turn, so
// only the new tokens are evaluated). docs/performance.md "Engine: warm turns".
//
//   genie_bench_warm_turns MODEL.gguf [--threads N] [--reps R] [--system-tokens T]
#include <genie/engine.hpp>
#include <genie/error.hpp>
#include <genie/model.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace genie;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

ChatMessage msg(std::string role, std::string content) {
    ChatMessage m;
    m.role = std::move(role);
    m.content = std::move(content);
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: genie_bench_warm_turns MODEL.gguf [--threads N] [--reps R] [--system-tokens T]\n");
        return 2;
    }
    const std::string path = argv[1];
    int threads = static_cast<int>(std::thread::hardware_concurrency());
    int reps = 3;
    int system_tokens = 300;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const int v = std::atoi(argv[i + 1]);
        if (a == "--threads") threads = v;
        else if (a == "--reps") reps = v;
        else if (a == "--system-tokens") system_tokens = v;
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    try {
        // The tokenizer, to size the prompts.
        const Model probe = Model::load(path);
        const Tokenizer& tok = probe.tokenizer();
        auto count = [&](const std::string& text) {
            TokenizeOptions o;
            o.add_special = false;
            return static_cast<int>(tok.tokenize(text, o).size());
        };
        const std::vector<std::string> sentences = {
            "You are a helpful voice assistant running on a small device in the user's home.",
            "Answer in one or two short sentences that sound natural when spoken aloud.",
            "Never use markdown, lists, code blocks or emoji, because your answer is read by a speech synthesizer.",
            "If you do not know something, say so briefly instead of guessing.",
            "The user may interrupt you at any time; keep the most important information first.",
            "Times are given in the user's local time zone and temperatures in degrees Celsius.",
        };
        std::string system;
        for (size_t i = 0; count(system) < system_tokens; ++i) system += (system.empty() ? "" : " ") + sentences[i % sentences.size()];
        const std::vector<std::string> questions = {
            "What is the weather going to be like this afternoon in the city centre, and should I bring an umbrella?",
            "Can you remind me what time my dentist appointment is tomorrow morning and how long it takes to get there?",
            "Please turn on the lights in the kitchen and set them to a warm colour at about half brightness.",
            "How many minutes should I boil an egg if I want the yolk to stay soft and a little bit runny?",
        };
        const std::vector<std::string> followups = {
            "And what about tomorrow morning, will it still be raining when I leave for work at eight?",
            "Thanks, and could you also tell me whether the bus or the train would be faster for that trip?",
            "Actually make that a bit brighter, and also switch on the small lamp next to the sofa please.",
            "What if I want it fully hard boiled instead, so that I can slice it for a salad later today?",
        };

        EngineOptions eo;
        eo.session.context_length = 1024;
        eo.session.threads = threads;
        eo.max_conversations = 2;
        Engine engine(eo);
        engine.load(path);
        engine.wait();
        engine.warmup();

        std::vector<double> cold_ttft, warm_ttft, cold_wall, warm_wall;
        int cold_eval = 0, warm_eval = 0, warm_reused = 0;
        for (int r = 0; r < reps; ++r) {
            const std::string q = questions[static_cast<size_t>(r) % questions.size()];
            const std::string f = followups[static_cast<size_t>(r) % followups.size()];
            EngineChatRequest req;
            req.conversation_id = fmt::format("conversation-{}", r);
            req.options.generate.max_tokens = 1;
            req.options.enable_thinking = false;
            req.messages = {msg("system", system), msg("user", q)};
            const EngineChatResult cold = engine.chat(req);
            req.messages.push_back(msg("assistant", "Sure."));
            req.messages.push_back(msg("user", f));
            const EngineChatResult warm = engine.chat(req);
            if (!warm.warm) throw Error(ErrorCode::Internal, "the follow-up turn did not find its session");
            cold_ttft.push_back(cold.chat.generation.timings.time_to_first_token_ms);
            warm_ttft.push_back(warm.chat.generation.timings.time_to_first_token_ms);
            cold_wall.push_back(cold.total_ms);
            warm_wall.push_back(warm.total_ms);
            cold_eval = cold.chat.generation.prompt_tokens - cold.reused_tokens;
            warm_eval = warm.chat.generation.prompt_tokens - warm.reused_tokens;
            warm_reused = warm.reused_tokens;
            std::fprintf(stderr, "rep %d: cold %.1f ms (%d tokens evaluated), warm %.1f ms (%d evaluated, %d reused)\n",
                         r, cold_ttft.back(), cold_eval, warm_ttft.back(), warm_eval, warm_reused);
            engine.forget(req.conversation_id);
        }
        const ModelInfo& info = probe.info();
        std::printf("model: %s (%s, %d layers), %d threads, system prompt %d tokens, %d reps (median)\n",
                    info.name.c_str(), info.architecture.c_str(), info.n_layer, threads, count(system), reps);
        std::printf("| turn | prompt tokens evaluated | TTFT (ms) | engine.chat total (ms) |\n");
        std::printf("|---|---:|---:|---:|\n");
        std::printf("| cold (first turn) | %d | %.1f | %.1f |\n", cold_eval, median(cold_ttft), median(cold_wall));
        std::printf("| warm (follow-up, %d reused) | %d | %.1f | %.1f |\n", warm_reused, warm_eval, median(warm_ttft),
                    median(warm_wall));
        std::printf("warm / cold TTFT = %.3f\n", median(warm_ttft) / median(cold_ttft));
    } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
