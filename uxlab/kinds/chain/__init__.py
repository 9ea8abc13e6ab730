"""Agent chains: a sequence of model calls and tool pauses laid on one timeline from the send.

A *chain* (one task an agent carries out) is a list of steps ending in the final answer:

- ``call``: a model call that streams text (planning, reading, writing, checking). It is
  an ordinary replay file (contract 1) shaped with its own profile;
- ``pause``: a tool or retrieval pause shown as agents show it, a status line such as
  "searching the web…" with a spinner, optionally with a tool call's JSON arguments;
- ``answer``: the final answer, a model call like the others, always the last step.

A chain file (``*.chain.json``, format ``uxlab.chain/1``) names its steps' replay files
relative to itself::

    {"format": "uxlab.chain/1", "id": "trip", "prompt": "...", "steps": [
      {"kind": "call", "label": "Planning", "replay": "trip-01-plan.jsonl"},
      {"kind": "pause", "label": "searching the web…", "ms": 1400,
       "tool": {"name": "web_search", "arguments": {"query": "..."}}},
      {"kind": "answer", "label": "Answer", "replay": "trip-09-answer.jsonl"}]}

A chain recorded from a real agent may say how the attempt ended: ``"outcome":
"completed" | "failed" | "abandoned"`` (with a free-text ``outcome_note``). Playback ignores
it; the costs (`pricing.tasks`: cost per completed task) read it, and there a failed or
abandoned attempt may end without its answer (such a file is not a study stimulus).

`build_chain_schedule(chain, factor_levels, seed)` lays the steps end to end from the send
(time 0): each call is shaped by ``shape(replay, profile, derive_seed(seed, "<id>#<i>"))``
with ``i`` its position in the full chain, so dropping steps never changes the others.

Chain factors (`CHAIN_FACTORS`), any other factor goes to every call's profile:

- ``call_ttft_ms``: the TTFT of every model call (the shaping factor ``ttft_ms`` per call);
- ``pause_ms``: the duration of every tool pause;
- ``n_steps``: the number of model calls including the final answer. The chain is *cut*,
  never repeated: the steps before the n-th model call of the working part are kept (each
  kept call with the tool pauses that follow it), then the final answer. ``n_steps = 1`` is
  a plain chat answer; the largest value is the whole chain as written.

Playing a chain is playing one schedule: `ChainSchedule.to_recording()` flattens the steps
into one `Recording` (each step opened by an empty *step marker* chunk, read back as a typed
`StepStart` by `step_marker(chunk)`) that the one playback path, `uxlab.player.Player`, plays
to any sink on absolute deadlines and can abandon at any point. `step_logs(schedule, log)`
reads the per-step timings back from the player's log (when each step began and ended, each
call's TTFT as shown) and `abandon_step(schedule, log)` the step given up in. No Textual here.

Questions after chosen steps: `HeldChainPlayer` plays the flattened schedule as consecutive
`Player`s, one per segment between holds, and *holds* after chosen steps while an
`ask(step)` coroutine runs (the participant answers). The clock of the next step restarts
when the last answer is given, as an agent UI that waits for its user would: every later
step is shifted by the time the hold took (`ChainHold.offset_ms`, real minus scheduled
time), while the schedule's own times, the timeout included, exclude the answering time.
Giving up works during a hold too. Its merged log reads back with `step_logs` like any.

The package, one module per job: `steps` (what a chain is), `files` (reading chain files),
`schedule` (laying a chain out in time), `played` (reading a played chain back), `held`
(holding a chain for questions), `run` (one chain trial while it plays and what it adds to
the stored trial) and `kind` (`ChainKind`, the trial kind: a chain study's stimuli, its
`[chain]` section and factors, and the checks of a stored chain trial). Everything is
re-exported here.
"""

from uxlab.kinds.chain.files import load_chain, load_chains
from uxlab.kinds.chain.held import (
    AskStep,
    ChainHold,
    ChainSegment,
    HeldChainPlayer,
    offset_at_ms,
    split_at_steps,
)
from uxlab.kinds.chain.kind import ChainKind
from uxlab.kinds.chain.played import StepLog, abandon_step, step_logs
from uxlab.kinds.chain.run import ChainRun
from uxlab.kinds.chain.schedule import (
    STEP_MARKER,
    ChainSchedule,
    ScheduledStep,
    StepStart,
    build_chain_schedule,
    chain_steps,
    chain_stimulus,
    cut_steps,
    step_at_ms,
    step_marker,
)
from uxlab.kinds.chain.steps import (
    CHAIN_FACTORS,
    CHAIN_FORMAT,
    CHAIN_SUFFIX,
    STEP_KINDS,
    Chain,
    ChainFormatError,
    ChainStep,
    StepKind,
)

__all__ = [
    "CHAIN_FACTORS",
    "CHAIN_FORMAT",
    "CHAIN_SUFFIX",
    "STEP_KINDS",
    "STEP_MARKER",
    "AskStep",
    "Chain",
    "ChainFormatError",
    "ChainHold",
    "ChainKind",
    "ChainRun",
    "ChainSchedule",
    "ChainSegment",
    "ChainStep",
    "HeldChainPlayer",
    "ScheduledStep",
    "StepKind",
    "StepLog",
    "StepStart",
    "abandon_step",
    "build_chain_schedule",
    "chain_steps",
    "chain_stimulus",
    "cut_steps",
    "load_chain",
    "load_chains",
    "offset_at_ms",
    "split_at_steps",
    "step_at_ms",
    "step_logs",
    "step_marker",
]
