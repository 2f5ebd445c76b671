// The voice loop's sentence chunker (examples/voice/sentence_chunker.hpp).
#include "sentence_chunker.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using voice::SentenceChunker;
using Chunks = std::vector<std::string>;

namespace {

/// Feeds `text` in pieces of `step` bytes (never splitting a UTF-8 character), then flushes.
Chunks chunk(const std::string& text, size_t step = 1, size_t min_chars = 12) {
    SentenceChunker c(SentenceChunker::Options{min_chars});
    Chunks out;
    for (size_t i = 0; i < text.size();) {
        size_t n = std::min(step, text.size() - i);
        while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) ++n;
        for (auto& s : c.push(std::string_view(text).substr(i, n))) out.push_back(s);
        i += n;
    }
    for (auto& s : c.flush()) out.push_back(s);
    return out;
}

}  // namespace

TEST_CASE("chunker: ASCII terminators followed by whitespace end sentences", "[chunker]") {
    const std::string text = "The weather is sunny today. It will rain tomorrow! Do you need an umbrella? Yes.";
    const Chunks expected = {"The weather is sunny today.", "It will rain tomorrow!", "Do you need an umbrella?", "Yes."};
    for (size_t step : {1, 2, 3, 7, 1000}) {
        INFO("step " << step);
        CHECK(chunk(text, step) == expected);
    }
}

TEST_CASE("chunker: a sentence is emitted as soon as the next character shows its end", "[chunker]") {
    SentenceChunker c;
    CHECK(c.push("It is twelve o'clock.").empty());  // '.' could be "12.5"
    CHECK(c.push(" ") == Chunks{"It is twelve o'clock."});
    CHECK(c.push("The value is 3.").empty());
    CHECK(c.push("5 degrees").empty());
    CHECK(c.flush() == Chunks{"The value is 3.5 degrees"});
}

TEST_CASE("chunker: decimals, ellipses and closing quotes", "[chunker]") {
    CHECK(chunk("Pi is about 3.14159 in value. Next one here.") ==
          Chunks{"Pi is about 3.14159 in value.", "Next one here."});
    CHECK(chunk("Wait for it... Then it happens quickly.") == Chunks{"Wait for it...", "Then it happens quickly."});
    CHECK(chunk("He said \"stop here.\" Then he left the room.") ==
          Chunks{"He said \"stop here.\"", "Then he left the room."});
    CHECK(chunk("Really?! That is a surprise to me.") == Chunks{"Really?! That is a surprise to me."});
}

TEST_CASE("chunker: CJK terminators end a sentence at once", "[chunker]") {
    SentenceChunker c(SentenceChunker::Options{2});
    CHECK(c.push("今天天气很好。") == Chunks{"今天天气很好。"});
    CHECK(c.push("你要出去吗？明天") == Chunks{"你要出去吗？"});
    CHECK(c.push("见！") == Chunks{"明天见！"});
    CHECK(c.flush().empty());
}

TEST_CASE("chunker: short sentences are joined with the next one", "[chunker]") {
    CHECK(chunk("Hi. How are you doing today?") == Chunks{"Hi. How are you doing today?"});
    CHECK(chunk("Ok. Sure. I will do that for you now.") == Chunks{"Ok. Sure. I will do that for you now."});
    CHECK(chunk("Ok.", 1) == Chunks{"Ok."});  // flush emits what is left, however short
    CHECK(chunk("Hi. Yo.", 1, 1) == Chunks{"Hi.", "Yo."});
}

TEST_CASE("chunker: markdown is stripped", "[chunker]") {
    const std::string md =
        "# Shopping list\n"
        "Here is what you need to buy:\n"
        "- **Milk** from the store\n"
        "* Fresh _bread_ please\n"
        "1. Call the [bakery](https://example.com/a_(b)) first\n"
        "2) Then go home quickly\n"
        "> A quoted line of text here\n"
        "| cell one | cell two is here |\n"
        "---\n"
        "![a picture](pic.png) Done with **all** of it!";
    const Chunks expected = {"Shopping list",
                             "Here is what you need to buy:",
                             "Milk from the store",
                             "Fresh bread please",
                             "Call the bakery first",
                             "Then go home quickly",
                             "A quoted line of text here",
                             "cell one cell two is here",
                             "a picture Done with all of it!"};
    for (size_t step : {1, 4, 1000}) {
        INFO("step " << step);
        CHECK(chunk(md, step) == expected);
    }
}

TEST_CASE("chunker: code is stripped", "[chunker]") {
    const std::string text =
        "Run the `ls` command to list files.\n"
        "```bash\n"
        "ls -la /tmp. echo done! \n"
        "```\n"
        "That shows everything in the folder.";
    const Chunks expected = {"Run the ls command to list files.", "That shows everything in the folder."};
    for (size_t step : {1, 2, 5, 1000}) {
        INFO("step " << step);
        CHECK(chunk(text, step) == expected);
    }
    CHECK(chunk("~~~\nint x = 1; return x.\n~~~\nAfter the code block.") == Chunks{"After the code block."});
}

TEST_CASE("chunker: reasoning is dropped and reset forgets everything", "[chunker]") {
    SentenceChunker c;
    CHECK(c.push("Let me think about this. The user wants the time. ", true).empty());
    CHECK(c.push("It is noon right now. ") == Chunks{"It is noon right now."});
    CHECK(c.push("And a half-finished sen").empty());
    c.reset();  // barge-in
    CHECK(c.push("New answer starts here. ") == Chunks{"New answer starts here."});
    CHECK(c.flush().empty());
}

TEST_CASE("chunker: chunks without letters or digits are dropped", "[chunker]") {
    CHECK(chunk("... --- !!!").empty());
    CHECK(chunk("Fine.\n\n\n***\n").size() == 1);
}
