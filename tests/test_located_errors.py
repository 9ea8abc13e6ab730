"""One located-error base: file-reading errors say `<path>:<line>: <field>: <problem>` and
survive a process boundary with their parts."""

from __future__ import annotations

import pickle

import pytest

from uxlab.kinds.chain import ChainFormatError
from uxlab.reading import LocatedError
from uxlab.study import StudyError, parse_study


def test_a_study_error_names_file_line_and_key_and_pickles_whole(tmp_path):
    path = tmp_path / "s.toml"
    with pytest.raises(StudyError) as info:
        parse_study('[study]\nid = "x"\ntitle = "t"\nseed = -1\n', path)
    err = info.value
    assert isinstance(err, LocatedError)
    assert str(err) == f"{path}:4: [study].seed: -1 is negative"
    assert (err.field, err.key, err.line) == ("[study].seed", "[study].seed", 4)
    back = pickle.loads(pickle.dumps(StudyError(path, "[abandon].key", "no such key", line=7)))
    assert (str(back), back.key, back.line) == (
        f"{path}:7: [abandon].key: no such key",
        "[abandon].key",
        7,
    )


def test_a_chain_error_keeps_its_message_and_parts():
    err = ChainFormatError("c.chain.json", "steps[2].kind", "'tool' is not a step kind")
    assert isinstance(err, LocatedError)
    assert str(err) == "c.chain.json: steps[2].kind: 'tool' is not a step kind"
    back = pickle.loads(pickle.dumps(err))
    assert (back.where, back.key, str(back)) == (err.where, err.key, str(err))


def test_a_key_path_is_found_at_the_line_that_writes_it():
    from uxlab.reading import toml_key_line

    text = (
        '[texts]\nconsent = """\n[design]\nmax_run = 9\n"""\n'  # lines 1-5: a string
        "[design]\nrepeats = 2\n"  # 6-7
        '[[questions]]\nid = "a"\n[[questions]]\nid = "b"\nscale = 5\n'  # 8-12
        '[factors]\n"ttft.ms" = [1]\nitl_ms = {levels = [1], down = 2}\n'  # 13-15
        "[factors.rho]\nlevels = [0.1]\n"  # 16-17
    )
    assert toml_key_line(text, "[design].repeats") == 7
    assert toml_key_line(text, "[design].max_run") == 6  # not in the string: the header
    assert toml_key_line(text, "[[questions]][1].scale") == 12
    assert toml_key_line(text, "[[questions]][0].scale") == 8
    assert toml_key_line(text, "[factors].ttft.ms[0]") == 14
    assert toml_key_line(text, "[factors.itl_ms].down") == 15
    assert toml_key_line(text, "[factors].rho[0]") == 16
    assert toml_key_line(text, "[stimuli].corpus") is None
    assert toml_key_line(text, None) is None
