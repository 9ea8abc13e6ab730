"""`[stimuli]`: the corpus of replays, the chains folder, or a live model (one of them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uxlab.errors import UxlabError
from uxlab.kinds.chain import Chain, chain_stimulus, load_chains
from uxlab.streams.corpus import Corpus, load_corpus
from uxlab.study.live_stimuli import LiveStimuli, live_corpus, parse_live
from uxlab.study.loading.reader import StudyReader, section_keys
from uxlab.study.spec import ASSIGNMENTS, TRIAL_KINDS


@dataclass(frozen=True)
class Stimuli:
    """What `[stimuli]` names, checked and loaded."""

    corpus_path: Path
    corpus: Corpus
    assignment: str
    prompt: str | None
    kind: str
    chains: dict[str, Chain] | None = None
    live: LiveStimuli | None = None


def read_stimuli(r: StudyReader, doc: dict[str, Any]) -> Stimuli:
    """`[stimuli]`: a replay corpus (optionally some of its files), chains or a live model."""
    s = r.table(doc, "stimuli")
    r.unknown(s, section_keys("stimuli"), "[stimuli]")
    kind = r.choice(s, "kind", "[stimuli]", TRIAL_KINDS, "single")
    if kind == "chain":
        chains_path, corpus, chains = _chain_stimuli(r, s)
        assignment = r.choice(s, "assignment", "[stimuli]", ASSIGNMENTS, "cycle")
        prompt = r.text(s, "prompt", "[stimuli]", None)
        return Stimuli(chains_path, corpus, assignment, prompt, kind, chains)
    if "chains" in s:
        raise r.err("[stimuli].chains", 'only with kind = "chain" (add it, or remove this)')
    if "live" in s:
        for key in ("corpus", "files"):
            if key in s:
                raise r.err(f"[stimuli].{key}", "not used with live = {...} (remove one)")
        live = parse_live(s["live"], r.err)
        assignment = r.choice(s, "assignment", "[stimuli]", ASSIGNMENTS, "cycle")
        corpus = live_corpus(live, r.path.parent)
        return Stimuli(r.path.parent, corpus, assignment, None, kind, None, live)
    if "corpus" not in s:
        raise r.err(
            "[stimuli].corpus",
            "missing (required): a replay folder or file, relative to the study file",
        )
    rel = r.text(s, "corpus", "[stimuli]")
    corpus_path = (r.path.parent / rel).resolve()
    if not corpus_path.exists():
        raise r.err("[stimuli].corpus", f"{rel!r} does not exist (looked for {corpus_path})")
    try:
        corpus = load_corpus(corpus_path)
    except UxlabError as exc:
        raise r.err("[stimuli].corpus", f"does not load: {exc}") from None
    if corpus.errors:
        raise r.err(
            "[stimuli].corpus",
            f"{len(corpus.errors)} replay file(s) do not load; first: {corpus.errors[0]}",
        )
    if "files" in s:
        files = r.get(s, "files", "[stimuli]", (list,), what="a list of file names")
        keep = []
        for i, name in enumerate(files):
            if not isinstance(name, str):
                raise r.err(f"[stimuli].files[{i}]", f"{name!r} is not a file name")
            target = (corpus_path / name).resolve()
            if target not in corpus.paths:
                raise r.err(f"[stimuli].files[{i}]", f"{name!r} is not a replay file in {rel!r}")
            keep.append(corpus.paths.index(target))
        corpus = Corpus(
            corpus.root, [corpus.recordings[k] for k in keep], [corpus.paths[k] for k in keep]
        )
    if not corpus.recordings:
        raise r.err("[stimuli].corpus", f"{rel!r} holds no replay files (*.jsonl)")
    ids = [rec.id for rec in corpus.recordings]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise r.err("[stimuli].corpus", f"recording id {dup[0]!r} appears twice")
    assignment = r.choice(s, "assignment", "[stimuli]", ASSIGNMENTS, "cycle")
    prompt = r.text(s, "prompt", "[stimuli]", None)
    return Stimuli(corpus_path, corpus, assignment, prompt, kind, None)


def _chain_stimuli(r: StudyReader, s: dict[str, Any]) -> tuple[Path, Corpus, dict[str, Chain]]:
    """`kind = "chain"`: the chains folder; the corpus holds one stream per chain."""
    for key in ("corpus", "files"):
        if key in s:
            raise r.err(
                f"[stimuli].{key}",
                'not used with kind = "chain": name the chain folder with chains = "..."',
            )
    if "chains" not in s:
        raise r.err(
            "[stimuli].chains",
            'missing (required with kind = "chain"): a folder of *.chain.json files, '
            'relative to the study file (e.g. "../replays/chains")',
        )
    rel = r.text(s, "chains", "[stimuli]")
    chains_path = (r.path.parent / rel).resolve()
    if not chains_path.exists():
        raise r.err("[stimuli].chains", f"{rel!r} does not exist (looked for {chains_path})")
    try:
        chains = load_chains(chains_path)
    except UxlabError as exc:
        raise r.err("[stimuli].chains", f"does not load: {exc}") from None
    paths = [c.path or chains_path for c in chains.values()]
    corpus = Corpus(chains_path, [chain_stimulus(c) for c in chains.values()], paths)
    return chains_path, corpus, chains
