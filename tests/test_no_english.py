"""The proof of issue 37: a French or Chinese edition's visible checks say nothing in English.

Each edition's released notebook (release/NAME_fr, release/NAME_zh) runs its test cells, in one Jupyter kernel per
edition, on every catalogued mistake (swapped in by the catalogue's harness) and on a set of generic failures (an
exception, a wrong shape, a wrong dtype, NaN rows, a leaking padding mask); the output must hold none of the
English words of :data:`ENGLISH` as whole words, once what stays English by design (:data:`ALLOWED`) is taken out.

Run ``python tests/test_no_english.py`` for the English words found per edition (the counts of the closing note).
"""

import collections
import functools
import inspect
import os
import re
import sys
from pathlib import Path

import pytest
import torch

from attnkit_grader import catalogue, registry
from attnkit_grader.judging import variants

EDITIONS = ("fr", "zh")
ASSIGNMENTS = ("ps1_learnable_pe", "ps2_relative_pe")

# English words that mean the sentence around them is English: function words, and the words today's messages are
# made of. Each is checked as a whole word, case-insensitive, outside ALLOWED. Kinds: function words (no French or
# Chinese sentence has them); the words of the checks' messages; the words of the checks' names and subjects.
ENGLISH = {
    # function words
    "the", "your", "you", "must", "should", "is", "are", "was", "were", "with", "not", "of", "and", "or", "for",
    "to", "in", "on", "at", "by", "from", "it", "its", "they", "their", "them", "be", "has", "have", "no", "but",
    "when", "where", "which", "what", "this", "that", "these", "every", "each", "than", "before", "after", "only",
    "exactly", "never", "both", "does", "do", "so", "as", "up", "there", "here", "one",
    # the words of today's messages
    "got", "expected", "shape", "contains", "entries", "entry", "differ", "first", "index", "off", "tolerance",
    "raised", "raises", "raise", "nothing", "code", "implemented", "yet", "known", "mistake", "mistakes", "fails",
    "failed", "weights", "weight", "output", "outputs", "gradient", "reached", "masked", "keys", "queries", "query",
    "table", "rows", "row", "parameter", "parameters", "module", "trainable", "train", "mode", "eval", "worked",
    "case", "edge", "length", "valid", "zero", "zeros", "changed", "change", "use", "apply", "give", "make",
    "numbers", "points", "score", "visible", "hidden", "checks", "check", "warning", "earned", "graded", "matrix",
    "exercise", "returns", "keeps", "versions", "equals", "positions", "allowed", "ignored", "diagonal", "bias",
    "layers", "default", "built", "argument", "optimizer", "update", "buffer", "plain", "tensor", "average",
    "passes", "selects", "known", "agree", "fix",
}

# What stays English by design, removed from the text before the words are looked for. Each kind with its reason.
ALLOWED = [
    # Names of code: Python identifiers with an underscore, a dot or brackets, and the course's calls (pe(X),
    # skew(X)): the student types them as they are.
    r"\b\w+\([^()]*\)", r"\b\w+_\w+\b", r"\b[\w.]+\.\w+\b", r"\b\w+\(", r"\bnn\.\w+",
    # An exception's own first line, quoted after its type (a library's or the student's words, not the kit's:
    # torch's "index 7 is out of bounds ..."), up to where the kit's sentence goes on.
    r"\b\w*Error\s?[:：]\s?.*?(?=\s\(levée dans|\s\(raised in|（|\.\s|。|$)",
    # The torch/Python names of dtypes and exceptions a message quotes: what the student will see in their code.
    r"\b(?:torch\.)?(?:float|int|bool)\d*\b", r"\b\w*(?:Error|Exception|Warning)\b", r"\bNaN\b", r"\binf\b",
    r"\bTrue\b", r"\bFalse\b", r"\bNone\b", r"<\w+>",          # <module>: Python's name of a cell's frame
    # Formulas and numbers: X + P, S[i, j], L = 1, shapes (2, 5, 16), 0.5, 1e-4.
    r"\b[A-Za-z]\b", r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?%?",
    # A student's own exception message, quoted after "raised ...:" is theirs (the generic failure below writes
    # one of its own, a word that is no English: "ÉCHEC-VOULU").
    r"ÉCHEC-VOULU",
    # nbgrader's word for a cell's failure, CellScoredZero's class name (Validate shows it as it is).
    r"\bCellScoredZero\b",
    # Terms the translations keep in English on purpose (the names of the code's objects the student writes:
    # an nn.Module's buffer, the bias argument, forward, dropout, softmax).
    r"\b(?:buffer|bias|forward|dropout|softmax)\b",
]
_ALLOWED = re.compile("|".join(f"(?:{pattern})" for pattern in ALLOWED), re.M)
_WORD = re.compile(r"[^\W\d_]+")       # whole words, accented letters included ("noté" is no "not")


def english_words(text, edition):
    """[word, ...] of ENGLISH found in ``text`` once ALLOWED is removed (French "points"/"structure" are French)."""
    text = re.sub(r"\n[ \t]+", " ", text)          # a wrapped line goes on where it was cut (an exception's words too)
    kept = _ALLOWED.sub(" ", text)
    # French words spelt as English ones (a French sentence may hold them): not English here.
    same = {"points", "structure", "index", "table", "mode", "code", "case", "gradient", "versions", "positions",
            "module", "passes", "argument"} if edition == "fr" else set()
    return [word.lower() for word in _WORD.findall(kept) if word.lower() in ENGLISH - same]


def _bent(value, how):
    """``value`` (a tensor, a tuple of them) made wrong as ``how`` says."""
    if isinstance(value, tuple):
        return tuple(_bent(v, how) for v in value)
    if not isinstance(value, torch.Tensor):
        return value
    if how == "shape":
        return value.unsqueeze(0)
    if how == "dtype":
        return value.to(torch.float16) if value.is_floating_point() else value.to(torch.float32)
    if how == "nan" and value.is_floating_point() and value.dim() >= 1 and value.numel():
        value = value.clone()
        value[..., 0, :] = float("nan") if value.dim() >= 2 else float("nan")
    return value


def generic(namespace, how):
    """The reference ``namespace`` failing generically: "exception" (every answer raises), "shape", "dtype", "nan"
    (every tensor it returns bent so), "mask" (the padding mask leaks: valid_lens is dropped wherever it is given)."""
    def broken(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if how == "exception":
                raise RuntimeError("ÉCHEC-VOULU")
            if how == "mask":
                bound = signature.bind(*args, **kwargs)
                if "valid_lens" in bound.arguments:
                    bound.arguments["valid_lens"] = None
                return function(*bound.args, **bound.kwargs)
            return _bent(function(*args, **kwargs), how)
        return wrapper

    module = namespace.get("__name__")
    bent = dict(namespace)
    for name, value in namespace.items():
        if name.startswith("_") or getattr(value, "__module__", None) != module:
            continue
        if isinstance(value, type) and issubclass(value, torch.nn.Module):
            bent[name] = type(name, (value,), {"forward": broken(value.forward), "__module__": module})
        elif callable(value) and not isinstance(value, type):
            bent[name] = broken(value)
    return bent


GENERIC = ("exception", "shape", "dtype", "nan", "mask")


def runs(assignment):
    """[(label, namespace)]: every catalogued mistake, then the generic failures of the reference."""
    manifest = registry.get(assignment)
    reference = variants.variant(manifest, None)
    return ([(bug.name, variants.variant(manifest, bug)) for bug in manifest.bugs]
            + [(f"generic {how}", generic(reference, how)) for how in GENERIC])


# What the kernel runs to swap a run's answers in, as the catalogue's harness does (catalogue._answers): a
# catalogued mistake's variant, or the reference bent by generic() (this module, imported in the kernel).
SWAP_BUG = """
_manifest = registry.get({assignment!r})
_bug = next(bug for bug in _manifest.bugs if bug.name == {name!r})
globals().update(catalogue._answers(variants.variant(_manifest, _bug)))
"""
SWAP_GENERIC = """
globals().update(catalogue._answers(test_no_english.generic(variants.variant(registry.get({assignment!r}), None),
                                                            {how!r})))
"""
KERNEL_SETUP = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import test_no_english
from attnkit_grader import catalogue, registry
from attnkit_grader.judging import variants
"""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def swaps(assignment):
    """[(label, code)]: what the kernel runs to put each run's answers in place (the labels of :func:`runs`)."""
    return ([(bug.name, SWAP_BUG.format(assignment=assignment, name=bug.name)) for bug in registry.get(assignment).bugs]
            + [(f"generic {how}", SWAP_GENERIC.format(assignment=assignment, how=how)) for how in GENERIC])


def in_kernel(edition, work):
    """{(assignment, label): text}: what each run's test cells print, in one Jupyter kernel for ``edition``,
    started in a folder named as the student's fetched copy (NAME_fr: the language comes from it, as on a
    laptop). The released notebook's setup cell runs once per assignment; each run swaps its answers in and
    runs every test cell, as a student's Run All would; a cell scored 0 shows CellScoredZero as Jupyter does."""
    from jupyter_client.manager import start_new_kernel

    folder = Path(work) / f"{ASSIGNMENTS[0]}_{edition}"
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ATTNKIT_LANG": "", "PYTHONWARNINGS": "ignore"}
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(folder), env=env)
    texts = {}

    def run(code, printed=None):
        def hook(message):
            kind, content = message["header"]["msg_type"], message["content"]
            if printed is None:
                return
            if kind == "stream":
                printed.append(content["text"])
            elif kind == "error":
                printed.append(_ANSI.sub("", "\n".join(content["traceback"])) + "\n")
        reply = client.execute_interactive(code, output_hook=hook, timeout=600)
        return reply["content"]["status"]

    try:
        assert run(KERNEL_SETUP) == "ok"
        for assignment in ASSIGNMENTS:
            setup, tests = catalogue._release_cells(assignment, None, edition)
            assert run(setup) == "ok", f"{assignment}: the released setup cell failed in the {edition} kernel"
            for label, swap in swaps(assignment):
                assert run(swap) == "ok", (assignment, label)
                printed = []
                for _, source in tests:
                    run(source, printed)
                texts[assignment, label] = "".join(printed)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    silent = [key for key, text in texts.items() if "[" not in text]      # every run prints its verdict lines
    assert not silent, f"runs that printed no verdict in the {edition} kernel: {silent}"
    return texts


def found(edition, work):
    """Counter of the English words the edition's visible checks print, and {run: (words, text)} where any."""
    counts, where = collections.Counter(), {}
    for (assignment, label), text in in_kernel(edition, work).items():
        words = english_words(text, edition)
        counts.update(words)
        if words:
            where[f"{assignment}: {label}"] = (words, text)
    return counts, where


def test_the_word_finder_sees_english_and_not_code_names_numbers_or_french():
    assert english_words("-> the index must be int64, got torch.float32", "fr") == ["the", "must", "be", "got"]
    assert english_words("-> relative_position_index(4, 6, 2) : forme attendue (3, 5), obtenue (2,)", "fr") == []
    assert english_words("X + P[:3] ; nn.Parameter ; requires_grad=True ; 1e-4 ; ValueError ; NaN", "fr") == []
    assert english_words("返回形状为 (3, 5) 的 int64 张量 with", "zh") == ["with"]


def test_a_generic_failure_fails_the_reference_notebook():
    """The generic failures do fail checks (else the proof would prove nothing about them)."""
    texts = catalogue.shown("ps2_relative_pe", [n for _, n in runs("ps2_relative_pe")[-len(GENERIC):]], "en")
    assert all("FAIL" in text for text in texts), texts


@pytest.mark.slow
@pytest.mark.parametrize("edition", EDITIONS)
def test_no_english_word_in_a_failing_checks_output(edition, tmp_path):
    counts, where = found(edition, tmp_path)
    shown = "\n\n".join(f"== {label}: {sorted(set(words))}\n{text}" for label, (words, text) in list(where.items())[:3])
    assert not counts, f"{sum(counts.values())} English words in {edition}: {counts.most_common(30)}\n{shown}"


if __name__ == "__main__":
    import tempfile

    for edition in sys.argv[1:] or EDITIONS:
        with tempfile.TemporaryDirectory() as work:
            counts, where = found(edition, work)
        print(f"{edition}: {sum(counts.values())} English words in {len(where)} runs; {counts.most_common(40)}")
        for label, (words, text) in where.items():
            print(f"  {label}: {collections.Counter(words).most_common(8)}")
            lines = [line for line in text.splitlines() if english_words(line, edition)]
            print("     " + "\n     ".join(lines[:2]))
