"""Kernel source extraction from completions (kerneleval.extract)."""

from __future__ import annotations

import pytest

from kerneleval.extract import completion_text, extract_source
from conftest import VECTOR_ADD

KERNEL_A = 'extern "C" __global__ void a(float* x) { x[0] = 1; }\n'
KERNEL_B = 'extern "C" __global__ void b(float* x) {\n  x[0] = 2;\n  x[1] = 3;\n}\n'


@pytest.mark.parametrize("tag", ["cuda", "cpp", "c++", "CUDA", "cu", ""])
def test_fence_tags(tag):
    text = f"Here is my kernel:\n```{tag}\n{VECTOR_ADD}```\nIt adds."
    assert extract_source(text) == VECTOR_ADD


def test_other_languages_are_not_kernels():
    text = f"```python\nprint('hi')\n```\n```cuda\n{KERNEL_A}```\n```bash\nnvcc x.cu\n```"
    assert extract_source(text) == KERNEL_A
    assert extract_source("```python\nimport torch\n```") is None


def test_last_or_largest_block():
    text = f"Draft:\n```cuda\n{KERNEL_B}```\nFinal:\n```cuda\n{KERNEL_A}```"
    assert extract_source(text) == KERNEL_A
    assert extract_source(text, pick="last") == KERNEL_A
    assert extract_source(text, pick="largest") == KERNEL_B
    with pytest.raises(ValueError):
        extract_source(text, pick="first")


def test_no_code():
    assert extract_source("I cannot write this kernel.") is None
    assert extract_source("") is None
    assert extract_source(None) is None
    assert extract_source("```cuda\n\n```") is None


def test_unclosed_fence_is_not_used():
    assert extract_source(f"```cuda\n{KERNEL_A}") is None  # cut at the token limit
    text = f"```cuda\n{KERNEL_B}```\nBetter:\n```cuda\n{KERNEL_A}"
    assert extract_source(text) == KERNEL_B


def test_bare_code_without_fences():
    assert extract_source(VECTOR_ADD) == VECTOR_ADD


def test_launch_directive_outside_the_block_is_kept():
    body = VECTOR_ADD.split("\n", 1)[1]  # without its @launch line
    text = f"Launch it as\n// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)\n\n```cuda\n{body}```"
    source = extract_source(text)
    assert source == body + "// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)\n"
    # A block with its own directive is left alone.
    text = f"// @launch other<<<1, 1>>>()\n```cuda\n{VECTOR_ADD}```"
    assert extract_source(text) == VECTOR_ADD


def test_directives_outside_the_block_keep_its_line_numbers():
    # The directives go after the block, in their order, so line N of the model's
    # block is line N of the source (a compile error's line is the model's line).
    body = 'extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {\n' \
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n" \
           "  if (i < n) c[i] = a[i] + b[i]\n" \
           "}"  # no final newline
    text = ("// @scratch tmp: f32[N]\nThen launch:\n// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)\n"
            f"```cuda\n{body}\n```\n// @launch again<<<1, 1>>>(c)\n")
    source = extract_source(text)
    lines = source.splitlines()
    assert lines[:4] == body.splitlines()
    assert lines[2] == "  if (i < n) c[i] = a[i] + b[i]"  # line 3 stays line 3
    assert lines[4:] == [
        "// @scratch tmp: f32[N]",
        "// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)",
        "// @launch again<<<1, 1>>>(c)",
    ]
    assert source.endswith("\n")


def test_think_blocks_are_ignored_when_there_is_an_answer():
    text = f"<think>Maybe\n```cuda\n{KERNEL_B}```\nno.</think>\nAnswer:\n```cuda\n{KERNEL_A}```"
    assert extract_source(text, pick="largest") == KERNEL_A
    only_thought = f"<think>\n```cuda\n{KERNEL_B}```\n</think>"
    assert extract_source(only_thought) == KERNEL_B


def test_chat_messages():
    messages = [{"role": "assistant", "content": f"```cuda\n{KERNEL_A}```"}]
    assert extract_source(messages) == KERNEL_A
    conversation = [
        {"role": "user", "content": f"fix this:\n```cuda\n{KERNEL_B}```"},
        {"role": "assistant", "content": [{"type": "text", "text": f"```cuda\n{KERNEL_A}```"}]},
    ]
    assert extract_source(conversation) == KERNEL_A  # user turns are not the answer
    assert completion_text({"role": "assistant", "content": "x"}) == "x"


def test_tilde_fences_and_longer_backtick_fences():
    assert extract_source(f"~~~cuda\n{KERNEL_A}~~~") == KERNEL_A
    assert extract_source(f"````cuda\n{KERNEL_A}```\n````") == KERNEL_A + "```\n"
