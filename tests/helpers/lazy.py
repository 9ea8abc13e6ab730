"""A library imported when a test first uses it, not when its module is collected.

Every pytest-xdist worker imports every test module while it collects; a library only a few
tests use (the OpenAI and Anthropic SDKs: about 1.2 CPU-s to import) is then loaded by each
worker, though one or two run those tests. `openai = lazy_import("openai")` at the top of a
test module reads like the import it stands for.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _Lazy:
    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # pytest looks at every module-level name while collecting
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


def lazy_import(name: str) -> Any:
    """The module `name`, imported at its first attribute access."""
    return _Lazy(name)
