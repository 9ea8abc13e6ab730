"""Build the bundled chat corpus (`replays/chat/*.jsonl`) with the synthetic generator.

The texts were written for uxlab; the timing is synthetic, drawn by
`uxlab.streams.synthetic.synthesize` with the seed and parameters listed below (each file's
header repeats them in `source.origin` and `source.generator`). Re-running gives
byte-identical files:

    uv run python replays/build_chat_corpus.py            # writes replays/chat/
    uv run python replays/build_chat_corpus.py --out DIR  # somewhere else
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from uxlab.streams.replay_file import write_replay
from uxlab.streams.synthetic import GapModel, ToolCall, synthesize

HERE = Path(__file__).resolve().parent

ONE_LINER = "Canberra. Many people guess Sydney, but Canberra was built as a compromise capital."

SKY = """\
The sky looks blue because of the way sunlight scatters in the air.

Sunlight contains every colour of the visible spectrum. On its way down it meets nitrogen and \
oxygen molecules that are far smaller than the wavelength of light. Such small particles \
scatter short wavelengths much more strongly than long ones: the effect grows with the \
inverse fourth power of the wavelength, so violet and blue light is scattered several times \
more than red. This is called Rayleigh scattering.

When you look at any part of the sky away from the Sun, what reaches your eye is light that \
has been scattered towards you by the air, and that light is dominated by the shorter \
wavelengths. Why not violet, then? Part of the violet is absorbed high in the atmosphere, the \
Sun emits less of it, and our eyes are much less sensitive to it than to blue. The mix we \
perceive comes out as sky blue.

The same idea explains red sunsets. Near the horizon, sunlight travels through far more air \
before it reaches you, so most of the blue has been scattered out of the direct beam along \
the way. What is left is the orange and red end of the spectrum. Dust, smoke and water \
droplets are larger than air molecules and scatter all colours more evenly, which is why \
clouds look white and a hazy sky looks pale.
"""

PACKING = """\
## Weekend hike: packing list

**Essentials**
- Map and a charged phone (download the offline map first)
- Water: at least 2 litres per person per day
- Snacks with some salt: nuts, crackers, dried fruit
- First-aid kit with blister plasters

**Clothing**
- A warm mid-layer, even in summer
- Rain jacket
- Spare socks (wool dries warmer)

**Overnight**
1. Tent or shelter, checked for all its poles
2. Sleeping bag rated a few degrees below the forecast
3. Headlamp with spare batteries

> Tell someone where you are going and when you expect to be back.
"""

PALINDROME = """\
Here is a version that ignores case, spaces and punctuation:

```python
def is_palindrome(text: str) -> bool:
    \"\"\"True when `text` reads the same backwards, ignoring case and non-letters.\"\"\"
    letters = [ch.lower() for ch in text if ch.isalnum()]
    return letters == letters[::-1]


assert is_palindrome("A man, a plan, a canal: Panama")
assert not is_palindrome("uxlab")
```

It keeps only letters and digits, lower-cases them, and compares the list with its reverse. \
That is O(n) in time and memory; for very long strings you could compare two indices moving \
towards the middle instead.
"""

BAT_BALL_REASONING = """\
Let the ball cost x. The bat costs x + 1.00. Together: x + (x + 1.00) = 1.10, so 2x = 0.10 \
and x = 0.05. Check: ball 0.05, bat 1.05, difference 1.00, total 1.10. The intuitive answer \
of 0.10 would make the bat 1.10 and the total 1.20, which is wrong.
"""

BAT_BALL_ANSWER = """\
The ball costs **5 cents** and the bat costs $1.05.

If the ball cost 10 cents, the bat would have to cost $1.10 to be a dollar more, and together \
they would cost $1.20.
"""

WEATHER_ANSWER = """\
It is 19 °C in Lisbon right now, with a light breeze from the north-west and a few clouds. \
It should stay dry this evening, so a light jacket is enough if you are heading out.
"""

FRIDGE = """\
A refrigerator does not make cold; it moves heat out of the food compartment and dumps it \
into your kitchen.

It does this with a fluid called a refrigerant that is pumped around a closed loop. In the \
coils inside the fridge the refrigerant is at low pressure, so it evaporates at a low \
temperature and absorbs heat from the air around it, just as sweat cools your skin when it \
evaporates. The compressor then squeezes the vapour, which makes it hot. In the coils at the \
back or bottom of the fridge that hot vapour gives its heat to the room and condenses back \
into a liquid. Finally the liquid passes through a narrow expansion valve, its pressure \
drops, and the cycle starts again.

A thermostat switches the compressor on and off to hold the temperature, which is why you \
hear the fridge hum for a while and then go quiet.
"""

EMAIL = """\
Subject: Could we move Thursday's meeting?

Hi Sam,

I'm sorry for the short notice, but something has come up on Thursday afternoon and I won't \
be able to make our 3 pm meeting. Would Friday morning or Monday after lunch work for you \
instead? I'm happy to fit around your calendar.

Thanks for understanding, and apologies again for the change.

Best regards,
Alex
"""

DATABASES = """\
For a small web app, **SQLite** is usually the simpler start and **PostgreSQL** the safer \
long-term home.

| | SQLite | PostgreSQL |
|---|---|---|
| Setup | a file, nothing to run | a server to install and run |
| Concurrent writes | one writer at a time | many, with row locks |
| Backups | copy the file | `pg_dump`, replication |
| Features | flexible types, fewer built-ins | JSONB, full-text search, extensions |
| Best for | one server, read-heavy sites | several app servers, heavy writes |

If you expect one server and modest traffic, start with SQLite and keep your SQL portable. \
Move to PostgreSQL when you need several processes writing at once or features SQLite lacks.
"""

GREETINGS = """\
- Spanish: *buenos días*
- French: *bonjour*
- German: *guten Morgen*
"""

CAFE_NAMES = """\
Here are three ideas, each with a different feel:

1. **Second Cup Club**: friendly and a little playful, for a place where regulars linger.
2. **Grounded**: short and calm, good for a minimalist shop with a focus on the beans.
3. **The Slow Pour**: suggests care and filter coffee, and reads well on a sign.
"""

SOURDOUGH = """\
Making a starter takes about a week and only flour, water and patience.

1. **Day 1.** Mix 50 g wholemeal flour with 50 g lukewarm water in a clean jar. Cover loosely \
and leave it somewhere warm, ideally around 24 °C.
2. **Days 2-3.** You may see a few bubbles, or nothing at all. Both are normal. Stir once a day.
3. **Days 4-7.** Each day, discard all but about 50 g, then feed it with 50 g flour and 50 g \
water. White bread flour is fine from now on.
4. **Ready.** When the starter reliably doubles within 4 to 8 hours of a feed and smells \
pleasantly sour, it is ready to bake with.

If a grey liquid collects on top, that is just alcohol from hungry yeast: pour it off and \
feed the starter. Throw it away only if you see pink or orange streaks or fuzzy mould.
"""

CLARIFY = "Of course. What are you working on, and where did you get stuck?"

GIT_UNDO = """\
It depends on whether you have pushed the commit.

**Not pushed yet:** move the branch back one commit and keep your changes staged:

```sh
git reset --soft HEAD~1
```

Use `--mixed` instead to keep the changes but unstage them, or `--hard` to throw them away \
(careful: that cannot be undone easily).

**Already pushed:** do not rewrite shared history. Make a new commit that undoes it:

```sh
git revert HEAD
```
"""

# id -> prompt, text and generator parameters. Seeds are fixed: never change one, add a file.
CORPUS: list[dict[str, Any]] = [
    {
        "id": "chat-one-liner",
        "prompt": "What is the capital of Australia?",
        "text": ONE_LINER,
        "ttft_ms": 420.0,
        "itl": GapModel(median_ms=28.0, sigma=0.3),
        "prelude_ms": 395.0,
        "seed": 101,
    },
    {
        "id": "chat-long-explanation",
        "prompt": "Why is the sky blue? Please explain it properly.",
        "text": SKY,
        "ttft_ms": 650.0,
        "itl": GapModel(median_ms=32.0, sigma=0.35, hiccup_prob=0.01),
        "prelude_ms": 610.0,
        "seed": 102,
    },
    {
        "id": "chat-markdown-list",
        "prompt": "What should I pack for a weekend hike with one night outdoors?",
        "text": PACKING,
        "ttft_ms": 540.0,
        "itl": GapModel(median_ms=26.0, sigma=0.3),
        "seed": 103,
    },
    {
        "id": "chat-code-answer",
        "prompt": "Write a Python function that checks whether a string is a palindrome.",
        "text": PALINDROME,
        "ttft_ms": 780.0,
        "itl": GapModel(median_ms=22.0, sigma=0.3, burst_prob=0.08),
        "seed": 104,
    },
    {
        "id": "chat-reasoning",
        "prompt": "A bat and a ball cost $1.10 in total. The bat costs $1.00 more than the "
        "ball. How much does the ball cost?",
        "text": BAT_BALL_ANSWER,
        "reasoning": BAT_BALL_REASONING,
        "ttft_ms": 900.0,
        "itl": GapModel(median_ms=20.0, sigma=0.35),
        "prelude_ms": 880.0,
        "seed": 105,
    },
    {
        "id": "chat-tool-call",
        "prompt": "What's the weather like in Lisbon right now?",
        "text": WEATHER_ANSWER,
        "tool_call": ToolCall(
            name="get_weather",
            arguments={"city": "Lisbon", "country": "PT", "unit": "celsius"},
            call_id="call_weather_1",
            run_ms=700.0,
            resume_ms=380.0,
        ),
        "ttft_ms": 600.0,
        "itl": GapModel(median_ms=25.0, sigma=0.3),
        "seed": 106,
    },
    {
        "id": "chat-midstream-stall",
        "prompt": "How does a refrigerator keep food cold?",
        "text": FRIDGE,
        "ttft_ms": 560.0,
        "itl": GapModel(median_ms=30.0, sigma=0.35),
        "stall_at": 70,
        "stall_ms": 2000.0,
        "seed": 107,
    },
    {
        "id": "chat-midstream-error",
        "prompt": "Draft a polite email asking a colleague to reschedule Thursday's meeting.",
        "text": EMAIL,
        "ttft_ms": 700.0,
        "itl": GapModel(median_ms=30.0, sigma=0.4),
        "error_at": 48,
        "error_type": "overloaded_error",
        "error_message": "Overloaded",
        "seed": 108,
    },
    {
        "id": "chat-slow-first-token",
        "prompt": "Should I use SQLite or PostgreSQL for a small web app?",
        "text": DATABASES,
        "ttft_ms": 3100.0,
        "itl": GapModel(median_ms=35.0, sigma=0.4),
        "prelude_ms": 240.0,
        "seed": 109,
    },
    {
        "id": "chat-fast-small-model",
        "prompt": "How do you say 'good morning' in Spanish, French and German?",
        "text": GREETINGS,
        "ttft_ms": 140.0,
        "itl": GapModel(median_ms=7.0, sigma=0.25, burst_prob=0.1),
        "model": "synthetic-small",
        "seed": 110,
    },
    {
        "id": "chat-chunked-delivery",
        "prompt": "Suggest three names for a small neighbourhood coffee shop.",
        "text": CAFE_NAMES,
        "ttft_ms": 480.0,
        "itl": GapModel(median_ms=90.0, sigma=0.3, burst_prob=0.0),
        "tokens_per_chunk": 4,
        "seed": 111,
    },
    {
        "id": "chat-jittery-long",
        "prompt": "How do I make a sourdough starter from scratch?",
        "text": SOURDOUGH,
        "ttft_ms": 820.0,
        "itl": GapModel(median_ms=30.0, sigma=0.8, burst_prob=0.1, hiccup_prob=0.03),
        "seed": 112,
    },
    {
        "id": "chat-clarifying",
        "prompt": "Can you help me with something?",
        "text": CLARIFY,
        "ttft_ms": 380.0,
        "itl": GapModel(median_ms=24.0, sigma=0.3),
        "prelude_ms": 360.0,
        "seed": 113,
    },
    {
        "id": "chat-steps-with-code",
        "prompt": "How do I undo my last git commit?",
        "text": GIT_UNDO,
        "ttft_ms": 510.0,
        "itl": GapModel(median_ms=28.0, sigma=0.35, hiccup_prob=0.02),
        "seed": 114,
    },
]


def build(out_dir: Path) -> list[Path]:
    """Write every recording of `CORPUS` to `out_dir`; return the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in CORPUS:
        params = dict(spec)
        text = params.pop("text")
        rec = synthesize(text, **params)
        written.append(write_replay(rec, out_dir / f"{rec.id}.jsonl"))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "chat", help="output folder")
    args = parser.parse_args(argv)
    for path in build(args.out):
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
