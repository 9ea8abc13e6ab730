"""Streams: the Recording model, the replay file format, importers and metrics."""

from uxlab.streams.corpus import Corpus, load_corpus
from uxlab.streams.recording import (
    FORMAT,
    Chunk,
    End,
    ErrorEvent,
    Header,
    Meta,
    Recording,
)
from uxlab.streams.replay_file import (
    ReplayFormatError,
    dumps_recording,
    parse_replay,
    read_replay,
    write_replay,
)

__all__ = [
    "FORMAT",
    "Chunk",
    "Corpus",
    "End",
    "ErrorEvent",
    "Header",
    "Meta",
    "Recording",
    "ReplayFormatError",
    "dumps_recording",
    "load_corpus",
    "parse_replay",
    "read_replay",
    "write_replay",
]
