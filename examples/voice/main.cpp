// genie-voice: the voice loop of an assistant, with text standing in for speech-to-text.
// Turns come from stdin (or --input FILE); the model streams pieces in-process through
// genie::Engine (a warm conversation); a sentence chunker hands each sentence to a TTS
// thread (espeak-ng synthesizing PCM) while the model keeps generating; a new stdin line
// arriving during a turn cancels generation and speech (barge-in). Each turn's audio is
// written to PREFIX-N.wav and its latencies are printed. docs/voice.md.
//
//   genie-voice -m MODEL.gguf [--input FILE] [--wav-prefix PREFIX] [--max-tokens N]
//               [--threads N] [--ctx N] [--min-chars N] [--system TEXT] [--voice NAME]
//               [--think]
#include "sentence_chunker.hpp"

#include <genie/engine.hpp>
#include <genie/error.hpp>

#include <espeak-ng/speak_lib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <deque>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

struct Args {
    std::string model, input, wav_prefix = "voice-turn", system = "You are a helpful voice assistant. Answer briefly.";
    std::string voice = "en";
    int max_tokens = 128, threads = 0, ctx = 2048;
    size_t min_chars = 12;
    bool think = false;
};

void usage() {
    std::fprintf(stderr,
                 "usage: genie-voice -m MODEL.gguf [--input FILE] [--wav-prefix PREFIX] [--max-tokens N]\n"
                 "                   [--threads N] [--ctx N] [--min-chars N] [--system TEXT] [--voice NAME] [--think]\n"
                 "Reads one user turn per line (stdin, or FILE: turns one after another, no barge-in).\n"
                 "A line arriving on stdin while a turn runs interrupts it (barge-in).\n");
}

bool write_wav(const std::string& path, const std::vector<int16_t>& pcm, int rate) {
    std::ofstream out(path, std::ios::binary);
    if (!out) return false;
    auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
    auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
    const uint32_t data = static_cast<uint32_t>(pcm.size() * 2);
    out.write("RIFF", 4);
    u32(36 + data);
    out.write("WAVEfmt ", 8);
    u32(16);
    u16(1);  // PCM
    u16(1);  // mono
    u32(static_cast<uint32_t>(rate));
    u32(static_cast<uint32_t>(rate * 2));
    u16(2);
    u16(16);
    out.write("data", 4);
    u32(data);
    out.write(reinterpret_cast<const char*>(pcm.data()), static_cast<std::streamsize>(data));
    return static_cast<bool>(out);
}

// ---- TTS thread: espeak-ng in synchronous mode, one sentence at a time ------------------
class Tts {
public:
    explicit Tts(const std::string& voice) {
        worker_ = std::thread([this, voice] { run(voice); });
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return rate_ != 0; });
    }
    ~Tts() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        worker_.join();
    }
    int rate() const { return rate_; }
    bool ok() const { return rate_ > 0; }

    /// Starts a new turn's audio.
    void begin_turn() {
        std::lock_guard<std::mutex> lk(mu_);
        queue_.clear();
        pcm_.clear();
        first_audio_.reset();
        cancel_ = false;
        last_sample_ = Clock::now();
    }
    void say(std::string sentence) {
        {
            std::lock_guard<std::mutex> lk(mu_);
            queue_.push_back(std::move(sentence));
        }
        cv_.notify_all();
    }
    /// Barge-in: drops queued sentences and stops the one being synthesized.
    void cancel() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            queue_.clear();
            cancel_ = true;
        }
        cv_.notify_all();
    }
    /// Waits until every queued sentence is synthesized (or cancelled).
    void drain() {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return queue_.empty() && !speaking_; });
    }
    /// The turn's audio and timing (after drain()).
    std::vector<int16_t> take_pcm() {
        std::lock_guard<std::mutex> lk(mu_);
        return std::move(pcm_);
    }
    std::optional<Clock::time_point> first_audio() {
        std::lock_guard<std::mutex> lk(mu_);
        return first_audio_;
    }
    Clock::time_point last_sample() {
        std::lock_guard<std::mutex> lk(mu_);
        return last_sample_;
    }

private:
    static int on_audio(short* wav, int n, espeak_EVENT* events) {
        Tts* self = static_cast<Tts*>(events ? events->user_data : nullptr);
        if (!self) return 0;
        std::lock_guard<std::mutex> lk(self->mu_);
        if (self->cancel_) return 1;  // abort this synthesis
        if (wav && n > 0) {
            if (!self->first_audio_) self->first_audio_ = Clock::now();
            self->pcm_.insert(self->pcm_.end(), wav, wav + n);
            self->last_sample_ = Clock::now();
        }
        return 0;
    }

    void run(const std::string& voice) {
        int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 100, nullptr, espeakINITIALIZE_DONT_EXIT);
        if (rate > 0) {
            espeak_SetSynthCallback(&Tts::on_audio);
            if (espeak_SetVoiceByName(voice.c_str()) != EE_OK) std::fprintf(stderr, "genie-voice: no espeak-ng voice '%s'\n", voice.c_str());
        }
        {
            std::lock_guard<std::mutex> lk(mu_);
            rate_ = rate > 0 ? rate : -1;
        }
        cv_.notify_all();
        if (rate <= 0) return;
        for (;;) {
            std::string sentence;
            {
                std::unique_lock<std::mutex> lk(mu_);
                cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
                if (stop_) break;
                sentence = std::move(queue_.front());
                queue_.pop_front();
                speaking_ = true;
            }
            espeak_Synth(sentence.c_str(), sentence.size() + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, nullptr, this);
            {
                std::lock_guard<std::mutex> lk(mu_);
                speaking_ = false;
            }
            cv_.notify_all();
        }
        espeak_Terminate();
    }

    std::thread worker_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::string> queue_;
    std::vector<int16_t> pcm_;
    std::optional<Clock::time_point> first_audio_;
    Clock::time_point last_sample_{};
    int rate_ = 0;
    bool stop_ = false, cancel_ = false, speaking_ = false;
};

// ---- input: lines from stdin (with barge-in) or a file ----------------------------------
class Input {
public:
    Input(std::istream& in, std::function<void()> on_line) : in_(in), on_line_(std::move(on_line)) {
        reader_ = std::thread([this] {
            std::string line;
            while (std::getline(in_, line)) {
                {
                    std::lock_guard<std::mutex> lk(mu_);
                    lines_.push_back(line);
                }
                cv_.notify_all();
                if (on_line_) on_line_();
            }
            {
                std::lock_guard<std::mutex> lk(mu_);
                eof_ = true;
            }
            cv_.notify_all();
        });
    }
    ~Input() { reader_.join(); }
    /// The next line (blocks); nullopt at the end. `superseded` = lines skipped because a
    /// newer one arrived before their turn started (barge-in before speaking).
    std::optional<std::string> next(bool latest_only, int& superseded) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return eof_ || !lines_.empty(); });
        if (lines_.empty()) return std::nullopt;
        superseded = 0;
        if (latest_only)
            while (lines_.size() > 1) {
                lines_.pop_front();
                ++superseded;
            }
        std::string line = std::move(lines_.front());
        lines_.pop_front();
        return line;
    }

private:
    std::istream& in_;
    std::function<void()> on_line_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::string> lines_;
    bool eof_ = false;
    std::thread reader_;  // last: starts after the members it uses
};

}  // namespace

int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage();
                std::exit(2);
            }
            return argv[++i];
        };
        if (k == "-m" || k == "--model") a.model = value();
        else if (k == "--input") a.input = value();
        else if (k == "--wav-prefix") a.wav_prefix = value();
        else if (k == "--max-tokens") a.max_tokens = std::stoi(value());
        else if (k == "--threads") a.threads = std::stoi(value());
        else if (k == "--ctx") a.ctx = std::stoi(value());
        else if (k == "--min-chars") a.min_chars = static_cast<size_t>(std::stoul(value()));
        else if (k == "--system") a.system = value();
        else if (k == "--voice") a.voice = value();
        else if (k == "--think") a.think = true;
        else if (k == "-h" || k == "--help") {
            usage();
            return 0;
        } else {
            std::fprintf(stderr, "genie-voice: unknown argument '%s'\n", k.c_str());
            usage();
            return 2;
        }
    }
    if (a.model.empty()) {
        usage();
        return 2;
    }
    try {
        genie::EngineOptions eo;
        eo.session.context_length = a.ctx;
        eo.session.threads = a.threads;
        eo.max_conversations = 1;
        genie::Engine engine(eo);
        engine.load(a.model);
        engine.wait();
        engine.warmup();
        Tts tts(a.voice);
        if (!tts.ok()) {
            std::fprintf(stderr, "genie-voice: espeak-ng could not be initialised (espeak-ng-data missing?)\n");
            return 1;
        }
        std::ifstream file;
        if (!a.input.empty()) {
            file.open(a.input);
            if (!file) {
                std::fprintf(stderr, "genie-voice: cannot open '%s'\n", a.input.c_str());
                return 1;
            }
        }
        const bool barge_in = a.input.empty();  // a file's turns run one after another
        std::atomic<bool> turn_active{false};
        std::atomic<bool> interrupted{false};
        Input input(barge_in ? std::cin : static_cast<std::istream&>(file), [&] {
            if (barge_in && turn_active.load()) {  // barge-in: stop generating and speaking
                interrupted = true;
                engine.cancel("voice");
                tts.cancel();
            }
        });

        std::vector<genie::ChatMessage> history;
        if (!a.system.empty()) history.push_back({"system", a.system, {}, {}, {}, {}, {}});
        int turn = 0;
        for (;;) {
            int superseded = 0;
            std::optional<std::string> line = input.next(barge_in, superseded);
            if (!line) break;
            for (int s = 0; s < superseded; ++s)
                std::printf("turn %d: interrupted (barge-in before it started)\n", ++turn);
            if (line->empty()) continue;
            ++turn;
            const auto t0 = Clock::now();
            interrupted = false;
            turn_active = true;
            tts.begin_turn();
            voice::SentenceChunker chunker(voice::SentenceChunker::Options{a.min_chars});
            std::optional<Clock::time_point> first_token, first_sentence;
            int sentences = 0;
            auto speak = [&](std::vector<std::string> chunks) {
                for (auto& c : chunks) {
                    if (!first_sentence) first_sentence = Clock::now();
                    ++sentences;
                    std::fprintf(stderr, "[say] %s\n", c.c_str());
                    tts.say(std::move(c));
                }
            };
            genie::EngineChatRequest rq;
            rq.conversation_id = "voice";
            rq.messages = history;
            rq.messages.push_back({"user", *line, {}, {}, {}, {}, {}});
            rq.options.generate.max_tokens = a.max_tokens;
            rq.options.enable_thinking = a.think;
            genie::EngineChatResult r;
            try {
                r = engine.chat(rq, [&](const genie::Piece& p) {
                    if (!first_token) first_token = Clock::now();
                    speak(chunker.push(p.text, p.kind == genie::PieceKind::Reasoning));
                    return !interrupted.load();
                });
            } catch (const genie::Error& e) {
                turn_active = false;
                std::printf("turn %d: failed: %s\n", turn, e.what());
                std::fflush(stdout);
                continue;
            }
            if (!interrupted) speak(chunker.flush());
            tts.drain();
            turn_active = false;
            const auto t_end = interrupted ? Clock::now() : std::max(tts.last_sample(), Clock::now());
            const std::vector<int16_t> pcm = tts.take_pcm();
            const std::string wav = a.wav_prefix + "-" + std::to_string(turn) + ".wav";
            if (!write_wav(wav, pcm, tts.rate())) std::fprintf(stderr, "genie-voice: cannot write '%s'\n", wav.c_str());
            const auto first_audio = tts.first_audio();
            auto at = [&](const std::optional<Clock::time_point>& t) {
                if (!t) return std::string("-");
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.1f ms", ms(t0, *t));
                return std::string(buf);
            };
            std::printf("turn %d: %sfirst token %s, first sentence %s, first audio %s, total %.1f ms; "
                        "%d sentences, %d tokens (%d reused), %.2f s of audio -> %s\n",
                        turn, interrupted ? "interrupted (barge-in), " : "", at(first_token).c_str(),
                        at(first_sentence).c_str(), at(first_audio).c_str(), ms(t0, t_end), sentences,
                        r.chat.generation.completion_tokens, r.reused_tokens,
                        static_cast<double>(pcm.size()) / tts.rate(), wav.c_str());
            std::fflush(stdout);
            if (!interrupted) {
                history.push_back({"user", *line, {}, {}, {}, {}, {}});
                history.push_back({"assistant", r.chat.generation.text, {}, {}, {}, {}, {}});
            }
        }
    } catch (const genie::Error& e) {
        std::fprintf(stderr, "genie-voice: %s\n", e.what());
        return 1;
    }
    return 0;
}
