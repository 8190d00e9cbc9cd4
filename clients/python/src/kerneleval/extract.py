"""Kernel source out of a model's completion.

Rules (extract_source):
  1. A chat completion ([{"role": "assistant", "content": ...}, ...]) is the text
     of its assistant messages, joined; `content` may be a string or a list of
     {"type": "text", "text": ...} parts.
  2. Reasoning in <think>...</think> is ignored when there is code outside it.
  3. The code blocks are the *closed* fences tagged ```cuda, ```cu, ```cpp,
     ```c++, ```cxx, ```c, or untagged ```; blocks tagged with another language
     (```python, ```bash) are not kernels. A fence left open (the completion was
     cut at the token limit) is not used: a truncated kernel cannot compile.
  4. Of several blocks, `pick="last"` (the default: a model that revises writes
     its final answer last) or `pick="largest"` (most characters).
  5. `// @launch` and `// @scratch` directive lines written outside the chosen
     block (e.g. in the prose above it) are appended after the block, in their
     order, when the block has no @launch line of its own (the server reads
     directives anywhere in the source; after the block, line N of the model's
     block stays line N, so compile errors point at the model's lines).
  6. With no fenced block at all, a completion that contains `__global__` is
     taken whole (a model prompted to answer with bare code).
Returns None when there is no code.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

KERNEL_LANGUAGES = frozenset({"", "cuda", "cu", "cpp", "c++", "cxx", "c", "cuh", "hpp", "h"})

# An opening fence at a line start: ``` or more backticks (or ~~~), an optional
# info string; the block runs to a closing fence of the same kind and length.
_FENCE_RE = re.compile(
    r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)?[ \t]*(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_THINK_RE = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_DIRECTIVE_RE = re.compile(r"^[ \t]*//[ \t]*@(launch|scratch)\b.*$", re.MULTILINE)


def completion_text(completion: Any) -> str:
    """Plain text of a completion: a string, or chat messages (rule 1)."""
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    parts: list[str] = []
    messages = list(completion) if isinstance(completion, Iterable) else []
    has_roles = any(isinstance(m, dict) and "role" in m for m in messages)
    for message in messages:
        if isinstance(message, str):
            parts.append(message)
            continue
        if not isinstance(message, dict):
            continue
        if has_roles and message.get("role") != "assistant":
            continue
        parts.append(_content_text(message.get("content")))
    return "\n".join(p for p in parts if p)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") == "text":
                texts.append(str(part.get("text", "")))
        return "\n".join(texts)
    return str(content)


def code_blocks(text: str) -> list[tuple[str, str, int, int]]:
    """(language, body, start, end) of every closed fenced block, in order."""
    blocks = []
    for match in _FENCE_RE.finditer(text):
        info = match.group("info").strip()
        language = info.split()[0].lower() if info else ""
        blocks.append((language, match.group("body"), match.start(), match.end()))
    return blocks


def extract_source(completion: Any, pick: str = "last") -> Optional[str]:
    """The kernel source in a completion (module docstring), or None."""
    if pick not in ("last", "largest"):
        raise ValueError(f"kerneleval: pick must be 'last' or 'largest', not {pick!r}")
    text = completion_text(completion)
    if not text.strip():
        return None
    outside_think = _THINK_RE.sub("", text)
    for candidate in (outside_think, text) if outside_think != text else (text,):
        source = _extract_from_text(candidate, pick)
        if source is not None:
            return source
    return None


def _extract_from_text(text: str, pick: str) -> Optional[str]:
    blocks = [b for b in code_blocks(text) if b[0] in KERNEL_LANGUAGES and b[1].strip()]
    if not blocks:
        if "__global__" in text and "```" not in text:
            return text.strip() + "\n"
        return None
    chosen = blocks[-1] if pick == "last" else max(blocks, key=lambda b: len(b[1].strip()))
    source = chosen[1]
    if "@launch" not in source:
        # Directives the model wrote outside the block (rule 5).
        outside = text[: chosen[2]] + text[chosen[3]:]
        for _, body, _, _ in code_blocks(outside):
            outside = outside.replace(body, "")
        directives = [m.group(0).strip() for m in _DIRECTIVE_RE.finditer(outside)]
        if directives:
            source = (source if source.endswith("\n") else source + "\n") + "\n".join(directives)
    return source if source.endswith("\n") else source + "\n"
