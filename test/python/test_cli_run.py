"""genie-cli run: the contract (stdout = generated text or ids only) and parity with
llama.cpp's greedy continuation of stories260K (test/golden/stories260K.json)."""
import json
import pathlib
import re
import subprocess

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "stories260K.json"


def run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_run_ids_match_llama_cpp(genie_cli, testdata):
    golden = json.loads(GOLDEN.read_text())
    model = testdata / "models" / "stories260K.gguf"
    for case in golden["cases"]:
        r = run(genie_cli, "run", "-m", model, "-p", case["prompt"], "-n", 64, "--temp", 0, "--ids", "--ignore-eos",
                "--threads", 2)
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        ids = [int(t) for t in r.stdout.split()]
        assert r.stdout.endswith("\n") and r.stdout.count("\n") == 1
        assert ids == case["tokens"], case["prompt"]


def test_run_text_and_verbose(genie_cli, testdata):
    model = testdata / "models" / "stories260K.gguf"
    r = run(genie_cli, "run", "-m", model, "-p", "Once upon a time", "-n", 20)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(", there was a little girl named Lily")
    assert r.stderr == ""
    v = run(genie_cli, "run", "-m", model, "-p", "Once upon a time", "-n", 20, "--verbose")
    assert v.stdout == r.stdout  # timings never reach stdout
    assert "prompt: 5 tokens" in v.stderr and "generated: 20 tokens" in v.stderr and "finish: length" in v.stderr


def test_run_errors(genie_cli, testdata, tmp_path):
    model = testdata / "models" / "stories260K.gguf"
    r = run(genie_cli, "run", "-m", tmp_path / "missing.gguf", "-p", "x")
    assert r.returncode == 1 and "NOT_FOUND" in r.stderr and r.stdout == ""
    r = run(genie_cli, "run", "-m", model, "-p", "Once upon a time " * 40, "-c", 32)
    assert r.returncode == 1 and "CONTEXT_OVERFLOW" in r.stderr
    r = run(genie_cli, "run", "-m", model)
    assert r.returncode == 2 and "usage" in r.stderr
    r = run(genie_cli, "run", "-m", model, "-p", "x", "-n", "abc")
    assert r.returncode == 1 and "-n expects an integer" in r.stderr


def test_chat_pipes_turns(genie_cli, testdata):
    """genie-cli chat reads one user turn per stdin line; stdout holds only the answers."""
    model = testdata / "models" / "stories260K.gguf"  # no chat template: the ChatML fallback
    r = subprocess.run([str(genie_cli), "chat", "-m", str(model), "-n", "6", "--temp", "0", "--verbose"],
                       input="Hello\nOnce upon a time\n/reset\nHello\n", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    answers = r.stdout.split("\n")[:-1]
    assert len(answers) >= 3
    assert r.stderr.count("tokens at") == 3
    assert "(conversation cleared)" in r.stderr
    # The first and the post-/reset turn see the same conversation, so greedy answers match.
    first, last = r.stdout.split("\n", 1)[0], answers[-1]
    assert first == last


def test_run_and_chat_grammar_file(genie_cli, testdata, tmp_path):
    """--grammar-file constrains the output to a GBNF grammar (run and chat); a bad
    grammar is an error naming the line."""
    model = testdata / "models" / "stories260K.gguf"
    grammar = tmp_path / "answer.gbnf"
    grammar.write_text('root ::= ("yes" | "no") ", " [a-z]{1,6} "."\n')
    r = run(genie_cli, "run", "-m", model, "-p", "Once upon a time", "-n", "32", "--grammar-file", grammar)
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"(yes|no), [a-z]{1,6}\.\n", r.stdout), r.stdout
    chat = subprocess.run([str(genie_cli), "chat", "-m", str(model), "--temp", "0", "--grammar-file", str(grammar)],
                          input="Hi\n", capture_output=True, text=True, timeout=120)
    assert chat.returncode == 0, chat.stderr
    assert re.fullmatch(r"(yes|no), [a-z]{1,6}\.\n", chat.stdout), chat.stdout
    grammar.write_text("root ::= missing\n")
    bad = run(genie_cli, "run", "-m", model, "-p", "x", "--grammar-file", grammar)
    assert bad.returncode != 0 and "rule 'missing' is used but not defined" in bad.stderr


def test_run_speculative_flags_give_the_golden_ids(genie_cli, testdata):
    """-md (the model drafting for itself) and --spec-lookup: the same greedy ids as llama.cpp's
    plain continuation, and --verbose reports the proposals kept (docs/speculative.md)."""
    golden = json.loads(GOLDEN.read_text())
    model = testdata / "models" / "stories260K.gguf"
    case = golden["cases"][0]
    for flags in (["-md", model, "--draft-max", 4, "--draft-p-min", 0], ["--spec-lookup", 2, "--draft-max", 6]):
        r = run(genie_cli, "run", "-m", model, "-p", case["prompt"], "-n", 64, "--temp", 0, "--ids", "--ignore-eos",
                "--threads", 2, "--verbose", *flags)
        assert r.returncode == 0, r.stderr
        assert [int(t) for t in r.stdout.split()] == case["tokens"], flags
        assert "proposed" in r.stderr or flags[0] == "--spec-lookup"
    bad = run(genie_cli, "run", "-m", model, "-p", "x", "--draft-max", "many")
    assert bad.returncode != 0 and "--draft-max expects an integer" in bad.stderr
