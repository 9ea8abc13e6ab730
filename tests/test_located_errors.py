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
