"""Reading a study file (TOML) into the typed model of `uxlab.study.spec`, checked at the edge.

Validation happens here, so the rest of uxlab can trust a `Study`. Every error is a
`StudyError` naming the file, the key path and the problem, e.g.
`studies/x.toml: [factors].ttft_ms[2]: -5 is negative`; unknown keys get a did-you-mean;
references are checked (the corpus exists and loads, factor names are real profile
parameters, the base profile and every factor level make a valid profile).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from uxlab.chain import CHAIN_FACTORS, Chain, chain_stimulus, load_chains
from uxlab.errors import UxlabError
from uxlab.live.live_schedule import live_profile_problem
from uxlab.reading import (
    MAX_SLIDER_ABS,
    MAX_STUDY_FILE_BYTES,
    MAX_TIMEOUT_S,
    InputProblem,
    read_bounded_text,
    study_level_max,
)
from uxlab.shaping import FACTOR_NAMES, Profile, ProfileError
from uxlab.streams.corpus import Corpus, load_corpus
from uxlab.study.keys import check_key
from uxlab.study.live_stimuli import LiveStimuli, live_corpus, parse_live
from uxlab.study.spec import (
    ASSIGNMENTS,
    INTEGER_FACTORS,
    ORDERS,
    PROCEDURES,
    QUESTION_TYPES,
    QUESTION_WHEN,
    TRIAL_KINDS,
    YES_MEANS,
    Abandon,
    Attention,
    Counterbalance,
    Design,
    Factor,
    Question,
    SessionOptions,
    Study,
    StudyError,
    Timing,
    make_conditions,
    profile_levels,
    step_response_id,
)

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

_SECTIONS = {
    "study": ("id", "title", "version", "seed"),
    "texts": ("consent", "instructions", "debrief"),
    "stimuli": ("corpus", "chains", "live", "files", "assignment", "prompt", "kind"),
    "profile": None,  # checked by Profile.from_table
    "factors": None,  # any profile parameter
    "design": ("repeats", "blocks", "order", "blocked_by", "max_run", "practice", "break_every"),
    "counterbalance": ("group_cap", "stale_after_min"),
    "questions": None,
    "abandon": ("key", "timeout_s", "ask_questions"),
    "attention": ("every", "text", "question", "answer", "levels"),
    "chain": ("ask_after_steps",),
    "timing": ("max_late_p99_ms", "max_frame_shared_share", "requeue_flagged", "max_requeued"),
    "session": ("rerun_interrupted",),
}
_FACTOR_KEYS = ("levels", "between", "procedure", "down", "grid")
_QUESTION_KEYS = (
    "id",
    "type",
    "text",
    "when",
    "scale",
    "labels",
    "acceptable_at",
    "yes_means",
    "options",
    "min",
    "max",
)


def _did_you_mean(word: str, choices: list[str] | tuple[str, ...], fmt: str = "{!r}") -> str:
    """` (did you mean 'x'?)` or ` (one of 'a', 'b')`, as the shaping errors say it."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    close = close or [c for c in choices if word and c.startswith(word)][:1]
    if close:
        return f" (did you mean {fmt.format(close[0])}?)"
    return " (one of " + ", ".join(fmt.format(c) for c in choices) + ")"


class _Loader:
    """Reads one study table, raising StudyError at the first problem."""

    def __init__(self, path: Path):
        self.path = path
        self.live: LiveStimuli | None = None
        self.source = ""

    def live_profiles(self, profile: Profile, factors: list[Factor]) -> None:
        """A live study's profile must draw its timing (a live stream has none to keep)."""
        problem = live_profile_problem(profile.with_factors({f.name: f.levels[0] for f in factors}))
        if problem is not None:
            raise self.err("[profile]", f"{problem} (a live study)")

    def err(self, key: str | None, problem: str) -> StudyError:
        return StudyError(self.path, key, problem)

    def table(self, doc: dict[str, Any], name: str, required: bool = True) -> dict[str, Any]:
        if name not in doc:
            if required:
                raise self.err(f"[{name}]", "missing section")
            return {}
        value = doc[name]
        if not isinstance(value, dict):
            raise self.err(f"[{name}]", f"must be a table, not {_type_name(value)}")
        return value

    def unknown(self, table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
        for key in table:
            if key not in allowed:
                raise self.err(f"{where}.{key}", "unknown key" + _did_you_mean(key, allowed))

    def get(
        self,
        table: dict,
        key: str,
        where: str,
        types: tuple[type, ...],
        default: Any = ...,
        what: str | None = None,
    ) -> Any:
        if key not in table:
            if default is ...:
                raise self.err(f"{where}.{key}", "missing (required)")
            return default
        value = table[key]
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            want = what or " or ".join(_TYPE_WORDS.get(t, t.__name__) for t in types)
            raise self.err(f"{where}.{key}", f"{value!r} is not {want}")
        return value

    def text(self, table: dict, key: str, where: str, default: Any = ...) -> Any:
        value = self.get(table, key, where, (str,), default, "a string")
        if isinstance(value, str) and not value.strip():
            raise self.err(f"{where}.{key}", "is empty")
        return value

    def positive_int(
        self, table: dict, key: str, where: str, default: Any = ..., minimum: int = 1
    ) -> Any:
        value = self.get(table, key, where, (int,), default, "a whole number")
        if isinstance(value, int) and value < minimum:
            raise self.err(f"{where}.{key}", f"{value} must be at least {minimum}")
        return value

    def number(self, table: dict, key: str, where: str, default: Any = ...) -> Any:
        value = self.get(table, key, where, (int, float), default, "a number")
        if isinstance(value, (int, float)) and not math.isfinite(value):
            raise self.err(f"{where}.{key}", f"{value} is not a finite number")
        return value

    def choice(
        self, table: dict, key: str, where: str, choices: tuple[str, ...], default: Any = ...
    ) -> Any:
        value = self.get(table, key, where, (str,), default, "a string")
        if value is not None and value not in choices:
            raise self.err(
                f"{where}.{key}",
                f"{value!r} is not allowed" + _did_you_mean(value, choices),
            )
        return value

    # --- sections -------------------------------------------------------------------------

    def load(self, text: str) -> Study:
        if len(text) > MAX_STUDY_FILE_BYTES:
            raise self.err(
                None,
                f"{len(text):,} characters is too large for a study file "
                f"(at most {MAX_STUDY_FILE_BYTES:,} bytes)",
            )
        self.source = text
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise self.err(None, f"not valid TOML: {exc}") from None
        except RecursionError:
            raise self.err(None, "not a usable study file: nested too deeply") from None
        except ValueError as exc:  # an integer past Python's digit limit
            raise self.err(None, f"not a usable study file ({str(exc)[:60]})") from None
        for key in doc:
            if key not in _SECTIONS:
                raise self.err(
                    f"[{key}]", "unknown section" + _did_you_mean(key, tuple(_SECTIONS), "[{}]")
                )

        st = self.table(doc, "study")
        self.unknown(st, _SECTIONS["study"], "[study]")
        sid = self.text(st, "id", "[study]")
        if not _ID_RE.match(sid):
            raise self.err("[study].id", f"{sid!r} may hold only letters, digits, '-', '_', '.'")
        title = self.text(st, "title", "[study]")
        version = st.get("version", "1")
        if not isinstance(version, (str, int)) or isinstance(version, bool):
            raise self.err("[study].version", f"{version!r} is not a string")
        seed = self.get(st, "seed", "[study]", (int,), what="a whole number")
        if seed < 0:
            raise self.err("[study].seed", f"{seed} is negative")

        tx = self.table(doc, "texts")
        self.unknown(tx, _SECTIONS["texts"], "[texts]")
        texts = {
            "consent": self.text(tx, "consent", "[texts]"),
            "instructions": self.text(tx, "instructions", "[texts]"),
        }
        if "debrief" in tx:
            texts["debrief"] = self.text(tx, "debrief", "[texts]")

        corpus_path, corpus, assignment, prompt, kind, chains = self.stimuli(doc)
        profile = self.profile(doc)
        factors = self.factors(doc, profile, chains)
        live = self.live
        if live is not None:
            self.live_profiles(profile, factors)
        design = self.design(doc, factors)
        counter = self.counterbalance(doc)
        questions = self.questions(doc)
        adaptive = [f for f in factors if f.procedure != "fixed"]
        if adaptive and not any(q.type == "yesno" and q.when == "trial" for q in questions):
            raise self.err(
                f"[factors.{adaptive[0].name}].procedure",
                f"{adaptive[0].procedure!r} needs a per-trial yes/no question to adapt to "
                '(add [[questions]] with type = "yesno")',
            )
        abandon = self.abandon(doc, questions)
        timing = self.timing(doc)
        attention = self.attention(doc, questions, factors, profile)
        ask_after_steps, questions = self.chain_asks(doc, chains, questions)
        return Study(
            path=self.path,
            text=text,
            sha256=hashlib.sha256(text.encode()).hexdigest(),
            id=sid,
            title=title,
            version=str(version),
            seed=seed,
            texts=texts,
            corpus_path=corpus_path,
            assignment=assignment,
            prompt=prompt,
            kind=kind,
            profile=profile,
            factors=factors,
            design=design,
            counterbalance=counter,
            questions=questions,
            abandon=abandon,
            attention=attention,
            corpus=corpus,
            chains=chains,
            live=live,
            ask_after_steps=ask_after_steps,
            timing=timing,
            session=self.session_options(doc),
        )

    def chain_asks(
        self, doc: dict, chains: dict[str, Chain] | None, questions: list[Question]
    ) -> tuple[tuple[int, ...], list[Question]]:
        """`[chain] ask_after_steps` and the `when = "step"` questions asked there."""
        c = self.table(doc, "chain", required=False)
        step_qs = [i for i, q in enumerate(questions) if q.when == "step"]
        if chains is None:
            if "chain" in doc:
                raise self.err("[chain]", 'only in a chain study ([stimuli] kind = "chain")')
            if step_qs:
                raise self.err(
                    f"[[questions]][{step_qs[0]}].when",
                    '"step" questions are asked mid-chain: only in a chain study '
                    '([stimuli] kind = "chain"); use "trial" or "end"',
                )
            return (), questions
        self.unknown(c, _SECTIONS["chain"], "[chain]")
        where = "[chain].ask_after_steps"
        raw = self.get(c, "ask_after_steps", "[chain]", (list,), [], "a list of step numbers")
        last = max(len(ch.steps) for ch in chains.values()) - 2  # the last working step
        steps: list[int] = []
        for i, x in enumerate(raw):
            if isinstance(x, bool) or not isinstance(x, int) or x < 0:
                raise self.err(
                    f"{where}[{i}]",
                    f"{x!r} is not a step number (0, 1, ...: positions from 0, tool pauses "
                    "counted, as in abandon_step)",
                )
            if x in steps:
                raise self.err(f"{where}[{i}]", f"{x} repeats step {x}")
            if x > last:
                raise self.err(
                    f"{where}[{i}]",
                    f"{x}: no chain has a step {x} before its final answer (steps count from "
                    f"0, tool pauses included; use 0..{last})",
                )
            steps.append(x)
        if steps and not step_qs:
            raise self.err(where, 'no question to ask there: add [[questions]] with when = "step"')
        if step_qs and not steps:
            raise self.err(
                f"[[questions]][{step_qs[0]}].when",
                '"step" needs the steps to ask after: [chain] ask_after_steps = [2, 4]',
            )
        steps.sort()
        ids = {q.id for q in questions}
        for i in step_qs:
            for s in steps:
                rid = step_response_id(questions[i].id, s)
                if rid in ids:
                    raise self.err(
                        f"[[questions]][{i}].id",
                        f"{questions[i].id!r} asked after step {s} is stored as {rid!r}, the id "
                        "of another question (rename one)",
                    )
        out = [
            dataclasses.replace(q, after_steps=tuple(steps)) if q.when == "step" else q
            for q in questions
        ]
        return tuple(steps), out

    def chain_stimuli(self, s: dict) -> tuple[Path, Corpus, dict[str, Chain]]:
        """`kind = "chain"`: the chains folder; the corpus holds one stream per chain."""
        for key in ("corpus", "files"):
            if key in s:
                raise self.err(
                    f"[stimuli].{key}",
                    'not used with kind = "chain": name the chain folder with chains = "..."',
                )
        if "chains" not in s:
            raise self.err(
                "[stimuli].chains",
                'missing (required with kind = "chain"): a folder of *.chain.json files, '
                'relative to the study file (e.g. "../replays/chains")',
            )
        rel = self.text(s, "chains", "[stimuli]")
        chains_path = (self.path.parent / rel).resolve()
        if not chains_path.exists():
            raise self.err("[stimuli].chains", f"{rel!r} does not exist (looked for {chains_path})")
        try:
            chains = load_chains(chains_path)
        except UxlabError as exc:
            raise self.err("[stimuli].chains", f"does not load: {exc}") from None
        paths = [c.path or chains_path for c in chains.values()]
        corpus = Corpus(chains_path, [chain_stimulus(c) for c in chains.values()], paths)
        return chains_path, corpus, chains

    def stimuli(
        self, doc: dict
    ) -> tuple[Path, Corpus, str, str | None, str, dict[str, Chain] | None]:
        s = self.table(doc, "stimuli")
        self.unknown(s, _SECTIONS["stimuli"], "[stimuli]")
        kind = self.choice(s, "kind", "[stimuli]", TRIAL_KINDS, "single")
        if kind == "chain":
            chains_path, corpus, chains = self.chain_stimuli(s)
            assignment = self.choice(s, "assignment", "[stimuli]", ASSIGNMENTS, "cycle")
            prompt = self.text(s, "prompt", "[stimuli]", None)
            return chains_path, corpus, assignment, prompt, kind, chains
        if "chains" in s:
            raise self.err("[stimuli].chains", 'only with kind = "chain" (add it, or remove this)')
        if "live" in s:
            for key in ("corpus", "files"):
                if key in s:
                    raise self.err(f"[stimuli].{key}", "not used with live = {...} (remove one)")
            self.live = parse_live(s["live"], self.err)
            assignment = self.choice(s, "assignment", "[stimuli]", ASSIGNMENTS, "cycle")
            corpus = live_corpus(self.live, self.path.parent)
            return self.path.parent, corpus, assignment, None, kind, None
        if "corpus" not in s:
            raise self.err(
                "[stimuli].corpus",
                "missing (required): a replay folder or file, relative to the study file",
            )
        rel = self.text(s, "corpus", "[stimuli]")
        corpus_path = (self.path.parent / rel).resolve()
        if not corpus_path.exists():
            raise self.err("[stimuli].corpus", f"{rel!r} does not exist (looked for {corpus_path})")
        try:
            corpus = load_corpus(corpus_path)
        except UxlabError as exc:
            raise self.err("[stimuli].corpus", f"does not load: {exc}") from None
        if corpus.errors:
            raise self.err(
                "[stimuli].corpus",
                f"{len(corpus.errors)} replay file(s) do not load; first: {corpus.errors[0]}",
            )
        if "files" in s:
            files = self.get(s, "files", "[stimuli]", (list,), what="a list of file names")
            keep = []
            for i, name in enumerate(files):
                if not isinstance(name, str):
                    raise self.err(f"[stimuli].files[{i}]", f"{name!r} is not a file name")
                target = (corpus_path / name).resolve()
                if target not in corpus.paths:
                    raise self.err(
                        f"[stimuli].files[{i}]", f"{name!r} is not a replay file in {rel!r}"
                    )
                keep.append(corpus.paths.index(target))
            corpus = Corpus(
                corpus.root, [corpus.recordings[k] for k in keep], [corpus.paths[k] for k in keep]
            )
        if not corpus.recordings:
            raise self.err("[stimuli].corpus", f"{rel!r} holds no replay files (*.jsonl)")
        ids = [r.id for r in corpus.recordings]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise self.err("[stimuli].corpus", f"recording id {dup[0]!r} appears twice")
        assignment = self.choice(s, "assignment", "[stimuli]", ASSIGNMENTS, "cycle")
        prompt = self.text(s, "prompt", "[stimuli]", None)
        return corpus_path, corpus, assignment, prompt, kind, None

    def profile(self, doc: dict) -> Profile:
        table = self.table(doc, "profile", required=False)
        try:
            return Profile.from_table(
                table, where=f"{self.path} [profile]", base_dir=self.path.parent
            )
        except ProfileError as exc:
            raise StudyError(self.path, None, _strip_path(str(exc), self.path)) from None

    def chain_level(self, name: str, x: float, key: str, chains: dict[str, Chain] | None) -> None:
        """Check one level of a chain factor (`CHAIN_FACTORS`)."""
        if chains is None:
            raise self.err(key, f'{name!r} is a chain factor: use it with [stimuli] kind = "chain"')
        if name == "n_steps":
            if not float(x).is_integer() or x < 1:
                raise self.err(key, f"{x} is not a whole number of model calls (1 or more)")
            short = min(chains.values(), key=lambda c: c.n_calls)
            if x > short.n_calls:
                raise self.err(
                    key,
                    f"{x:g} model calls: chain {short.id!r} has only {short.n_calls} "
                    f"(use 1..{short.n_calls})",
                )

    def factors(
        self, doc: dict, profile: Profile, chains: dict[str, Chain] | None = None
    ) -> list[Factor]:
        table = self.table(doc, "factors")
        if not table:
            raise self.err("[factors]", "needs at least one factor, e.g. ttft_ms = [200, 800]")
        out = []
        for name, value in table.items():
            if name not in FACTOR_NAMES and name not in CHAIN_FACTORS:
                choices = (*FACTOR_NAMES, *(CHAIN_FACTORS if chains is not None else ()))
                raise self.err(
                    f"[factors].{name}",
                    "not a profile parameter" + _did_you_mean(name, choices),
                )
            where = f"[factors].{name}"
            between, procedure, down, grid = False, "fixed", 2, 25
            if isinstance(value, dict):
                where = f"[factors.{name}]"
                self.unknown(value, _FACTOR_KEYS, where)
                between = self.get(value, "between", where, (bool,), False, "true or false")
                procedure = self.choice(value, "procedure", where, PROCEDURES, "fixed")
                down, grid = self.adaptive_options(value, where, name, procedure, between)
                value = self.get(value, "levels", where, (list,), what="a list of levels")
                where = f"{where}.levels"
            elif not isinstance(value, list):
                raise self.err(where, f"{value!r} is not a list of levels (or a table)")
            if not value:
                raise self.err(where, "has no levels")
            levels = []
            for i, x in enumerate(value):
                key = f"{where}[{i}]"
                if isinstance(x, bool) or not isinstance(x, (int, float)):
                    raise self.err(key, f"{x!r} is not a number")
                if not math.isfinite(x):
                    raise self.err(key, f"{x} is not a finite number")
                if x < 0 and name != "rho":
                    raise self.err(key, f"{x} is negative")
                if x > study_level_max(name):
                    raise self.err(
                        key, f"{x:g} is not plausible (at most {study_level_max(name):g})"
                    )
                if name in INTEGER_FACTORS and not float(x).is_integer():
                    raise self.err(key, f"{x} is not a whole number")
                if x in levels:
                    raise self.err(key, f"{x} repeats level {levels.index(x)}")
                if name in CHAIN_FACTORS:
                    self.chain_level(name, x, key, chains)
                try:
                    profile.with_factors(profile_levels({name: x}))
                except ProfileError as exc:
                    raise self.err(key, f"{x} is not a valid level: {exc.problem}") from None
                levels.append(x)
            if procedure != "fixed" and (len(levels) < 2 or min(levels) <= 0):
                raise self.err(
                    f"{where}",
                    f"procedure {procedure!r} needs at least two levels above 0 (the range "
                    "it searches, e.g. [100, 5000])",
                )
            out.append(Factor(name, tuple(levels), between, procedure, down, grid))
        adaptive = [f.name for f in out if f.procedure != "fixed"]
        if len(adaptive) > 1:
            raise self.err(
                f"[factors.{adaptive[1]}].procedure",
                f"only one factor may be adaptive; {adaptive[0]!r} already is",
            )
        if all(f.between for f in out):
            raise self.err(
                "[factors]",
                "every factor is between-participant; at least one must vary within a participant",
            )
        return out

    def adaptive_options(
        self, table: dict, where: str, name: str, procedure: str, between: bool
    ) -> tuple[int, int]:
        """`down` and `grid` of an adaptive factor (refused on a fixed one)."""
        for key in ("down", "grid"):
            if key in table and procedure == "fixed":
                raise self.err(
                    f"{where}.{key}", "only used with an adaptive procedure (quest, staircase, ...)"
                )
        if procedure != "fixed" and between:
            raise self.err(
                f"{where}.procedure", "an adaptive factor varies within a participant, not between"
            )
        if procedure != "fixed" and not name.endswith("_ms"):
            raise self.err(
                f"{where}.procedure",
                f"adaptive procedures search a latency in ms; {name!r} is not one (use ttft_ms, "
                "itl_ms, ...)",
            )
        down = self.positive_int(table, "down", where, 2)
        if down > 4:
            raise self.err(f"{where}.down", f"{down} is too many (1 to 4)")
        if "down" in table and procedure != "staircase":
            raise self.err(
                f"{where}.down", f"only used with procedure = 'staircase', not {procedure!r}"
            )
        grid = self.positive_int(table, "grid", where, 25, minimum=5)
        if grid > 200:
            raise self.err(f"{where}.grid", f"{grid} levels is too many (5 to 200)")
        return down, grid

    def design(self, doc: dict, factors: list[Factor]) -> Design:
        d = self.table(doc, "design", required=False)
        self.unknown(d, _SECTIONS["design"], "[design]")
        order = self.choice(d, "order", "[design]", ORDERS, "random")
        blocked_by = self.get(d, "blocked_by", "[design]", (str,), None, "a factor name")
        within = [f.name for f in factors if not f.between]
        if order == "blocked":
            if blocked_by is None:
                raise self.err(
                    "[design].blocked_by", 'missing: order = "blocked" needs the factor to block by'
                )
            if blocked_by not in within:
                raise self.err(
                    "[design].blocked_by",
                    f"{blocked_by!r} is not a within "
                    "factor of this study" + _did_you_mean(blocked_by, within),
                )
        elif blocked_by is not None:
            raise self.err(
                "[design].blocked_by", f'only used with order = "blocked", not {order!r}'
            )
        max_run = self.positive_int(d, "max_run", "[design]", None)
        n_cond = len(make_conditions([f for f in factors if not f.between]))
        repeats = self.positive_int(d, "repeats", "[design]", 1)
        if max_run is not None and n_cond == 1:
            raise self.err("[design].max_run", "cannot hold with a single condition")
        return Design(
            repeats=repeats,
            blocks=self.positive_int(d, "blocks", "[design]", 1),
            order=order,
            blocked_by=blocked_by,
            max_run=max_run,
            practice=self.positive_int(d, "practice", "[design]", 0, minimum=0),
            break_every=self.positive_int(d, "break_every", "[design]", None),
        )

    def counterbalance(self, doc: dict) -> Counterbalance:
        c = self.table(doc, "counterbalance", required=False)
        self.unknown(c, _SECTIONS["counterbalance"], "[counterbalance]")
        stale = self.number(c, "stale_after_min", "[counterbalance]", 120.0)
        if stale <= 0:
            raise self.err("[counterbalance].stale_after_min", f"{stale} must be positive")
        return Counterbalance(
            group_cap=self.positive_int(c, "group_cap", "[counterbalance]", None),
            stale_after_min=float(stale),
        )

    def questions(self, doc: dict) -> list[Question]:
        qs = doc.get("questions", [])
        if not isinstance(qs, list) or not all(isinstance(q, dict) for q in qs):
            raise self.err("[[questions]]", "must be an array of tables ([[questions]])")
        out: list[Question] = []
        for i, q in enumerate(qs):
            where = f"[[questions]][{i}]"
            self.unknown(q, _QUESTION_KEYS, where)
            qid = self.text(q, "id", where)
            if not re.match(r"^[a-z][a-z0-9_]*$", qid):
                raise self.err(
                    f"{where}.id",
                    f"{qid!r} must be lower-case letters, digits "
                    "and '_', starting with a letter (it becomes column q_<id>)",
                )
            if any(o.id == qid for o in out):
                raise self.err(f"{where}.id", f"{qid!r} is used by another question")
            qtype = self.choice(q, "type", where, QUESTION_TYPES)
            kw: dict[str, Any] = {
                "id": qid,
                "type": qtype,
                "text": self.text(q, "text", where),
                "when": self.choice(q, "when", where, QUESTION_WHEN, "trial"),
            }
            allowed = {
                "likert": ("scale", "labels", "acceptable_at"),
                "yesno": ("yes_means",),
                "choice": ("options",),
                "slider": ("min", "max", "labels"),
                "text": (),
            }[qtype]
            for key in ("scale", "labels", "acceptable_at", "yes_means", "options", "min", "max"):
                if key in q and key not in allowed:
                    raise self.err(f"{where}.{key}", f"not used by a {qtype} question")
            if qtype == "likert":
                scale = self.positive_int(q, "scale", where, minimum=2)
                if scale > 11:
                    raise self.err(f"{where}.scale", f"{scale} points is too many (2 to 11)")
                kw["scale"] = scale
                kw["labels"] = self.labels(q, where, 2)
                acc = self.positive_int(q, "acceptable_at", where, None)
                if acc is not None and acc > scale:
                    raise self.err(
                        f"{where}.acceptable_at", f"{acc} is outside the scale 1..{scale}"
                    )
                kw["acceptable_at"] = acc
            elif qtype == "yesno":
                kw["yes_means"] = self.choice(q, "yes_means", where, YES_MEANS, "acceptable")
            elif qtype == "choice":
                opts = self.get(q, "options", where, (list,), what="a list of options")
                if len(opts) < 2 or not all(isinstance(o, str) and o for o in opts):
                    raise self.err(f"{where}.options", "needs at least two non-empty strings")
                kw["options"] = tuple(opts)
            elif qtype == "slider":
                lo = self.number(q, "min", where, 0)
                hi = self.number(q, "max", where, 100)
                if hi <= lo:
                    raise self.err(f"{where}.max", f"{hi} must be above min ({lo})")
                for end, value in (("min", lo), ("max", hi)):
                    if abs(value) > MAX_SLIDER_ABS:
                        raise self.err(
                            f"{where}.{end}",
                            f"{value:g} is not plausible (within ±{MAX_SLIDER_ABS:g})",
                        )
                kw.update(min=float(lo), max=float(hi), labels=self.labels(q, where, 2))
            out.append(Question(**kw))
        return out

    def labels(self, q: dict, where: str, n: int) -> tuple[str, ...]:
        labels = self.get(q, "labels", where, (list,), [], "a list of strings")
        if labels and (len(labels) != n or not all(isinstance(x, str) for x in labels)):
            raise self.err(
                f"{where}.labels", f"needs {n} strings (the two end labels), got {labels!r}"
            )
        return tuple(labels)

    def abandon(self, doc: dict, questions: list[Question]) -> Abandon:
        a = self.table(doc, "abandon", required=False)
        self.unknown(a, _SECTIONS["abandon"], "[abandon]")
        timeout = self.number(a, "timeout_s", "[abandon]", None)
        if timeout is not None and timeout <= 0:
            raise self.err("[abandon].timeout_s", f"{timeout} must be positive (or leave it out)")
        if timeout is not None and timeout > MAX_TIMEOUT_S:
            raise self.err(
                "[abandon].timeout_s",
                f"{timeout:g} s is not plausible (at most {MAX_TIMEOUT_S:g} s, one hour)",
            )
        # Mid-chain questions share the screen with a live abandonment key.
        step_kinds = {q.type for q in questions if q.when == "step"}
        return Abandon(
            key=self.key_name(a, "key", "abandon", "escape", step_kinds),
            timeout_s=None if timeout is None else float(timeout),
            ask_questions=self.get(
                a, "ask_questions", "[abandon]", (bool,), False, "true or false"
            ),
        )

    def timing(self, doc: dict) -> Timing:
        """`[timing]`: the playback-fidelity tolerance (`uxlab.fidelity`)."""
        t = self.table(doc, "timing", required=False)
        self.unknown(t, _SECTIONS["timing"], "[timing]")
        late = self.number(t, "max_late_p99_ms", "[timing]", None)
        if late is not None and late <= 0:
            raise self.err(
                "[timing].max_late_p99_ms",
                f"{late} must be positive ms (or leave it out: half the shortest gap)",
            )
        share = self.number(t, "max_frame_shared_share", "[timing]", None)
        if share is not None and not 0 <= share <= 1:
            raise self.err(
                "[timing].max_frame_shared_share", f"{share} must be a share in [0, 1], e.g. 0.1"
            )
        return Timing(
            max_late_p99_ms=None if late is None else float(late),
            max_frame_shared_share=None if share is None else float(share),
            requeue_flagged=self.get(
                t, "requeue_flagged", "[timing]", (bool,), False, "true or false"
            ),
            max_requeued=self.positive_int(t, "max_requeued", "[timing]", 5, minimum=0),
        )

    def key_name(
        self, table: dict, key: str, section: str, default: str, live_question_types: set[str]
    ) -> str:
        """A key the participant presses, in Textual's spelling (`esc` -> `escape`), or a
        StudyError with the line when no terminal can deliver it to the trial screen
        (`live_question_types`: the kinds of question on screen while the key is live)."""
        raw = self.text(table, key, f"[{section}]", default)
        name, problem = check_key(
            raw,
            questions_live=bool(live_question_types),
            typing_live="text" in live_question_types,
        )
        if problem is not None:
            line = _line_of(self.source, section, key)
            raise StudyError(self.path, f"[{section}].{key}", problem, line=line)
        return name

    def session_options(self, doc: dict) -> SessionOptions:
        s = self.table(doc, "session", required=False)
        self.unknown(s, _SECTIONS["session"], "[session]")
        rerun = self.get(s, "rerun_interrupted", "[session]", (bool,), True, "true or false")
        return SessionOptions(rerun_interrupted=rerun)

    def attention(
        self, doc: dict, questions: list[Question], factors: list[Factor], profile: Profile
    ) -> Attention | None:
        a = self.table(doc, "attention", required=False)
        if not a:
            return None
        self.unknown(a, _SECTIONS["attention"], "[attention]")
        every = self.positive_int(a, "every", "[attention]", minimum=2)
        text = self.text(a, "text", "[attention]")
        trial_qs = [q for q in questions if q.when == "trial"]
        qid = self.text(a, "question", "[attention]")
        q = next((x for x in trial_qs if x.id == qid), None)
        if q is None:
            raise self.err(
                "[attention].question",
                f"{qid!r} is not a per-trial question"
                + _did_you_mean(qid, [x.id for x in trial_qs]),
            )
        if q.type == "text":
            raise self.err(
                "[attention].question",
                f"{qid!r} is a free-text question; a "
                "known answer needs likert, yesno, choice or slider",
            )
        answer = a.get("answer")
        if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
            raise self.err("[attention].answer", f"{answer!r} is not a valid answer")
        answer = str(answer)
        valid = _valid_answers(q)
        if valid is not None and answer not in valid:
            raise self.err(
                "[attention].answer",
                f"{answer!r} is not an answer to {qid!r}; expected one of: {', '.join(valid)}",
            )
        levels = None
        if "levels" in a:
            lv = self.get(a, "levels", "[attention]", (dict,), what="a table of factor levels")
            names = [f.name for f in factors if not f.between]
            for k, v in lv.items():
                if k not in names:
                    raise self.err(
                        f"[attention].levels.{k}",
                        "not a within factor of this study" + _did_you_mean(k, names),
                    )
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                    raise self.err(f"[attention].levels.{k}", f"{v!r} is not a valid level")
                if not math.isfinite(v) or v > study_level_max(k):
                    raise self.err(
                        f"[attention].levels.{k}",
                        f"{v:g} is not plausible (at most {study_level_max(k):g})",
                    )
            try:
                profile.with_factors(dict(lv), where="[attention].levels")
            except ProfileError as exc:
                raise StudyError(self.path, None, str(exc)) from None
            levels = dict(lv)
        return Attention(every=every, text=text, question=qid, answer=answer, levels=levels)


def _line_of(text: str, section: str, key: str) -> int | None:
    """The 1-based line of `key = ...` in `[section]` (None when written another way)."""
    current = None
    for i, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if header := re.match(r"^\[\s*([A-Za-z0-9_.-]+)\s*\]", stripped):
            current = header.group(1)
        elif current == section and re.match(rf"^{re.escape(key)}\s*=", stripped):
            return i
    return None


def _valid_answers(q: Question) -> list[str] | None:
    if q.type == "yesno":
        return ["yes", "no"]
    if q.type == "likert":
        return [str(i) for i in range(1, (q.scale or 0) + 1)]
    if q.type == "choice":
        return list(q.options)
    return None


def _strip_path(message: str, path: Path) -> str:
    prefix = f"{path} "
    return message[len(prefix) :] if message.startswith(prefix) else message


_TYPE_WORDS = {
    str: "a string",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    list: "a list",
    dict: "a table",
}


def _type_name(value: Any) -> str:
    return _TYPE_WORDS.get(type(value), type(value).__name__)


def load_study(path: str | Path) -> Study:
    """Read and validate a study file; raises StudyError naming the file, key path and problem."""
    path = Path(path)
    if not path.is_file():
        raise StudyError(path, None, "no such study file")
    try:
        text = read_bounded_text(path, MAX_STUDY_FILE_BYTES, "study file")
    except InputProblem as exc:
        raise StudyError(path, None, exc.problem) from None
    return _Loader(path).load(text)


def parse_study(text: str, path: str | Path) -> Study:
    """Validate study text as if it were the file at `path` (the corpus is relative to it)."""
    return _Loader(Path(path)).load(text)
