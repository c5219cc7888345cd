#!/usr/bin/env python3
"""Generates tests/world.jsonl: the labelled corpus of the world's text for the default PII
filters — identity numbers of 33 regions, values inside CJK, Hangul, Thai, Arabic and Cyrillic
text and in full-width forms, labels in many languages, keys and URLs whose rest must survive,
and hard negatives.

Each line is {"section": ..., "text": ..., "expected": [{"label": CATEGORY, "value": ...}],
"keep": [...]}: `value` is the exact substring that must be redacted, `keep` substrings that
must survive redaction. Values are built by construction and checked with independent
implementations (python-stdnum for identity numbers, `phonenumbers` for phone numbers; see
each section), never by running Paddock's detectors, so the corpus measures them.

Run from the crate: python3 tests/world/generate.py > tests/world.jsonl
(needs `pip install python-stdnum phonenumbers`).
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ids  # noqa: E402
import keys  # noqa: E402
import negatives  # noqa: E402
import reported  # noqa: E402
import scripts  # noqa: E402

SECTIONS = [("ids", ids, 20261202), ("scripts", scripts, 20261203), ("keys", keys, 20261204),
            ("reported", reported, 20261205), ("negatives", negatives, 20261206)]


def main():
    seen = set()
    counts = {}
    for name, module, seed in SECTIONS:
        for case in module.cases(random.Random(seed)):
            text = case["text"]
            if text in seen:
                continue
            seen.add(text)
            for expected in case["expected"]:
                assert expected["value"] in text, (name, expected, text)
            for kept in case.get("keep", []):
                assert kept in text, (name, kept, text)
            line = {"section": name, "text": text, "expected": case["expected"]}
            if case.get("keep"):
                line["keep"] = case["keep"]
            print(json.dumps(line, ensure_ascii=False))
            counts[name] = counts.get(name, 0) + 1
    print(json.dumps(counts), file=sys.stderr)


if __name__ == "__main__":
    main()
