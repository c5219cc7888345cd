"""Presidio's analyzer over the documents `paddock-bench pii` wrote, timed the same way.

Usage: python analyze.py DOCS.json SPACY_DIR (needs presidio-analyzer and spacy installed)
Prints one JSON line: {"bytes": N, "seconds": S, "entities": E} per corpus.
"""
import json
import sys
import time

import spacy
from presidio_analyzer import AnalyzerEngine
from presidio_analyzer.nlp_engine import SlimSpacyNlpEngine


def main():
    docs_path, spacy_dir = sys.argv[1], sys.argv[2]
    spacy.blank("en").to_disk(spacy_dir)
    engine = SlimSpacyNlpEngine(models=[{"lang_code": "en", "model_name": spacy_dir}], auto_download=False)
    analyzer = AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])
    corpora = json.load(open(docs_path, encoding="utf-8"))
    # Warm up (recognizer loading, the e-mail suffix list fallback) outside the timing.
    analyzer.analyze(text="warm up jane@example.com 4111 1111 1111 1111", language="en")
    out = {}
    for name, docs in corpora.items():
        size = sum(len(d.encode("utf-8")) for d in docs)
        start = time.perf_counter()
        entities = 0
        for doc in docs:
            entities += len(analyzer.analyze(text=doc, language="en"))
        out[name] = {"bytes": size, "seconds": time.perf_counter() - start, "entities": entities}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
