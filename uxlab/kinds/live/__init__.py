"""Live trials: each trial plays a live model's answer to its prompt, as it arrives.

`[stimuli] live = {...}` names the endpoint and the prompts (or `prompt_from =
"participant"`: the participant types each prompt), read by `stimuli`; the design assigns
prompts as it assigns recordings (one placeholder stream per prompt). A trial's schedule is
a `uxlab.live.live_schedule.LiveSchedule`, learnt while it plays: the request goes out at
the send (`uxlab.live.live_request.LiveRun`), and each chunk is shown at the later of its
arrival and its time drawn from the profile. Only what uxlab drew is fingerprinted and
verified; the text and its chunking are the model's.
"""

from uxlab.kinds.live.kind import LiveKind
from uxlab.kinds.live.stimuli import LiveStimuli, live_corpus, parse_live

__all__ = ["LiveKind", "LiveStimuli", "live_corpus", "parse_live"]
