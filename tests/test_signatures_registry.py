"""The signature registry: ``diagnose --help``, the verdict order and the docs tables
all come from it, and it cannot hold a signature twice."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from isoapprox.cli import main
from isoapprox.diagnostics import report as R
from isoapprox.diagnostics import signatures as S

DOCS = Path(__file__).resolve().parents[1] / "docs" / "diagnose.md"


def _help(capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_help_lists_every_signature_once_in_the_registry_order(capsys):
    out = _help(capsys)
    section = out[out.index("signatures (thresholds:"):out.index("theory (skip with")]
    listed = re.findall(r"^  ([a-z0-9_]+)  +\S", section, flags=re.MULTILINE)
    # the help lists the groups collapse, structure, consistency
    want = [*S.COLLAPSE_SIGNATURES, *S.STRUCTURE_SIGNATURES, *S.CONSISTENCY_SIGNATURES]
    assert listed == want
    assert sorted(listed) == sorted(S.SIGNATURE_NAMES)
    assert S.signatures_help() in out
    for name in S.SignatureThresholds.names():
        if name not in ("merge_margin_ratio", "merge_diameter_ratio"):
            assert name in section, name


def test_help_lists_the_verdict_words_in_the_verdict_order(capsys):
    out = " ".join(_help(capsys).split())
    words = list(dict.fromkeys(R.VERDICT_WORDS.values()))
    assert words[:6] == list(dict.fromkeys(R._HEADLINES[n][1] for n in S.VERDICT_ORDER))
    listed = ", ".join(words[:-1]) + " or " + words[-1]
    assert f"--summary prints only them): {listed}, with its evidence" in out


def test_verdict_order_and_headlines_come_from_the_registry():
    ranked = sorted((s for s in S.SIGNATURES if s.verdict_rank is not None),
                    key=lambda s: s.verdict_rank)
    assert S.VERDICT_ORDER == tuple(s.name for s in ranked)
    assert len(set(S.VERDICT_ORDER)) == len(S.VERDICT_ORDER)
    assert S.VERDICT_ORDER[:3] == ("all_distances_small", "stuck_at_margin", "stuck_at_ln2")
    for s in ranked:
        assert R._HEADLINES[s.name] == (s.status, s.word, s.headline)
        assert s.headline.startswith(s.word + ":")
    # the signatures that never decide the verdict word carry no verdict
    for s in S.SIGNATURES:
        if s.verdict_rank is None:
            assert s.status is s.word is s.headline is None, s.name
    assert set(S.CONSISTENCY_SIGNATURES).isdisjoint(S.VERDICT_ORDER)


def test_names_and_groups_come_from_the_registry():
    assert S.SIGNATURE_NAMES == tuple(s.name for s in S.SIGNATURES)
    assert S.SIGNATURE_NAMES == (S.COLLAPSE_SIGNATURES + S.CONSISTENCY_SIGNATURES
                                 + S.STRUCTURE_SIGNATURES)
    assert len(set(S.SIGNATURE_NAMES)) == len(S.SIGNATURE_NAMES) == 11
    assert list(S.SIGNATURE_REGISTRY) == list(S.SIGNATURE_NAMES)
    for s in S.SIGNATURES:
        for t in s.thresholds:
            assert t in S.SignatureThresholds.names(), (s.name, t)


def test_the_registry_refuses_a_name_or_a_verdict_rank_twice():
    first = S.SIGNATURES[0]
    with pytest.raises(ValueError, match="'all_distances_small' is registered twice"):
        S._registry((first, *S.SIGNATURES))
    twin = dataclasses.replace(S.SIGNATURES[1], name="other")
    with pytest.raises(ValueError, match="verdict ranks"):
        S._registry((*S.SIGNATURES[:2], twin, *S.SIGNATURES[2:]))
    bad = dataclasses.replace(first, name="x", group="elsewhere", verdict_rank=None)
    with pytest.raises(ValueError, match="unknown group"):
        S._registry((*S.SIGNATURES, bad))
    late = dataclasses.replace(first, name="y", verdict_rank=None)
    with pytest.raises(ValueError, match="by group"):
        S._registry((*S.SIGNATURES, late))


def test_docs_tables_are_the_registry():
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    header = "| signature | holds when | default |"
    tables = []
    for i, line in enumerate(lines):
        if line.strip() == header:
            rows = []
            for row in lines[i:]:
                if not row.strip().startswith("|"):
                    break
                rows.append(row.strip())
            tables.append("\n".join(rows) + "\n")
    # docs/diagnose.md shows the groups in the order collapse, consistency, structure
    assert tables == [S.signature_table(g) for g in ("collapse", "consistency", "structure")]


def test_docs_defaults_are_the_thresholds():
    th = S.SignatureThresholds()
    assert S.SIGNATURE_REGISTRY["all_distances_small"].defaults() == (
        f"{th.full_collapse_ratio:g}, {th.ranked_structure_score:g}")
    assert S.SIGNATURE_REGISTRY["missing_classes"].defaults() == "-"
    with pytest.raises(Exception, match="group"):
        S.signature_table("nope")


def test_detect_signatures_returns_the_registry_order():
    import numpy as np

    from isoapprox.diagnostics import collapse_statistics

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 4)
    st = collapse_statistics(rng.normal(size=(16, 3)), y, margin=0.2, quick=True)
    assert tuple(s.name for s in S.detect_signatures(st)) == S.SIGNATURE_NAMES
