"""rlpipe_sync.py's redaction (the rules of core/redact.ts, copied: the job has no Node) on the shared corpus
test/fixtures/redaction-corpus.txt: what must be hidden is, ordinary output is left alone; and its log lines."""
import os
import random
import re
import string

import pytest

import rlpipe_sync as s

CORPUS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "redaction-corpus.txt")
_rng = random.SystemRandom()
ALNUM = string.ascii_uppercase + string.ascii_lowercase + string.digits


def pick(alphabet, n):
    return "".join(_rng.choice(alphabet) for _ in range(n))


# The shapes test/redaction.test.ts makes (fresh fakes per run: no real-looking key is written in the source).
FAKES = {
    "AKIA": lambda: "AKIA" + pick(string.ascii_uppercase + "234567", 16),
    "ASIA": lambda: "ASIA" + pick(string.ascii_uppercase + "234567", 16),
    "AKID": lambda: "AKID" + pick(ALNUM, 32),
    "HWAK": lambda: pick(string.ascii_uppercase + string.digits, 20),
    "SK40": lambda: pick(ALNUM, 40),
    "AWSSECRET": lambda: pick(ALNUM + "+/", 40),
    "E2B": lambda: "e2b_" + pick("0123456789abcdef", 40),
    "HF": lambda: "hf_" + pick(ALNUM, 34),
    "WORD": lambda: pick(ALNUM, 24),
    "PEM": lambda: "\n".join([pick(ALNUM + "+/", 64) for _ in range(4)] + [pick(ALNUM, 30) + "=="]),
    "GHP": lambda: "ghp_" + pick(ALNUM, 36),
    "GHO": lambda: "gho_" + pick(ALNUM, 36),
    "GHU": lambda: "ghu_" + pick(ALNUM, 36),
    "GHS": lambda: "ghs_" + pick(ALNUM, 36),
    "GHR": lambda: "ghr_" + pick(ALNUM, 36),
    "GHPAT": lambda: "github_pat_" + pick(ALNUM, 22) + "_" + pick(ALNUM, 59),
}


def corpus():
    """(title, input, expected, planted values) per case, as test/redaction.test.ts reads the file."""
    cases = []
    with open(CORPUS, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.startswith("#") or line.strip() == "":
                continue
            if line.startswith("=== "):
                cases.append({"title": line[4:], "input": [], "output": None})
            elif line == "--- same":
                cases[-1]["output"] = cases[-1]["input"]
            elif line == "---":
                cases[-1]["output"] = []
            else:
                (cases[-1]["input"] if cases[-1]["output"] is None else cases[-1]["output"]).append(line)
    out = []
    for c in cases:
        fills = {}

        def fill(text):
            return re.sub(r"\{\{([A-Z0-9]+)\}\}", lambda m: fills.setdefault(m.group(1), FAKES[m.group(1)]()), text)
        assert c["output"] is not None, c["title"]
        text = fill("\n".join(c["input"]))
        out.append((c["title"], text, fill("\n".join(c["output"])), list(fills.values())))
    return out


CASES = corpus()


@pytest.mark.parametrize("title,text,expected,planted", CASES, ids=[c[0] for c in CASES])
def test_the_corpus(title, text, expected, planted):
    assert s.redact(text) == expected
    assert s.redact(expected) == expected, "redacting twice changes nothing"
    for p in planted:
        assert p not in expected


def test_the_sidecars_log_lines_are_redacted(capsys):
    word = pick(ALNUM, 24)
    s.log("PUT https://b.example.com/k?X-Amz-Signature=%s failed; AWS_SECRET_ACCESS_KEY=%s" % (word, word))
    err = capsys.readouterr().err
    assert word not in err
    assert "X-Amz-Signature=*** failed; AWS_SECRET_ACCESS_KEY=***" in err
