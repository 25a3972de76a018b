#!/usr/bin/env python3
"""Golden prompts for the Qwen3-VL chat templates, Thinking and Instruct, rendered by jinja2.

Writes tests/tokenizer/thinking_template_cases.json: each conversation below rendered by the
Qwen3-VL-*-Thinking template (qwen3vl_thinking_chat_template.jinja beside this file) and by the
Instruct template (the shared test model's chat_template.json). chat_format_test.cpp renders the
same conversations with qvl and compares byte for byte.

The jinja2 environment is the one transformers' apply_chat_template compiles templates with
(transformers/utils/chat_template_utils.py, _compile_jinja_template): ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and the loopcontrols extension, `tojson` = json.dumps with
ensure_ascii=False, and raise_exception. Messages and tools are passed as given.

Regenerate (Debian: apt-get install python3-jinja2):
    python3 tests/tokenizer/render_thinking_cases.py ../shared/testdata/qwen3vl-tiny-a
"""

import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))


def compile_template(text):
    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(text)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather \"now\" in a city (°C)",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
    },
}
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


def call(name, arguments):
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}


# (name, add_generation_prompt, messages, tools). No assistant content is null: both official
# templates iterate over it and fail (qvl renders null as "").
CASES = [
    ("single_turn", True, [{"role": "user", "content": "Hi"}], None),
    ("system_and_user", True,
     [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}],
     None),
    ("earlier_reasoning_as_field", True,
     [{"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "4", "reasoning_content": "Add two and two.\n"},
      {"role": "user", "content": "And 3+3?"}], None),
    ("earlier_reasoning_in_content", True,
     [{"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\n4"},
      {"role": "user", "content": "Sure?"}], None),
    ("last_assistant_keeps_reasoning", False,
     [{"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "\n\n4", "reasoning_content": "\n\nAdd them.\n\n"}], None),
    ("last_assistant_without_reasoning", False,
     [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}], None),
    ("empty_reasoning_string", False,
     [{"role": "user", "content": "x"},
      {"role": "assistant", "content": "y", "reasoning_content": ""}], None),
    ("reasoning_field_wins_over_content_tags", False,
     [{"role": "user", "content": "x"},
      {"role": "assistant", "content": "a</think>b", "reasoning_content": "r"}], None),
    ("content_tags_without_open_tag", True,
     [{"role": "user", "content": "q"},
      {"role": "assistant", "content": "thought one\n</think>\n\nanswer"},
      {"role": "user", "content": "q2"},
      {"role": "assistant", "content": "<think>only open, no close"}], None),
    ("two_close_tags", False,
     [{"role": "user", "content": "q"},
      {"role": "assistant", "content": "<think>a<think>b\n</think>mid</think>\nend"}], None),
    ("multi_step_tools_with_reasoning", True,
     [{"role": "system", "content": "You check the weather."},
      {"role": "user", "content": "Weather in Paris and Oslo?"},
      {"role": "assistant", "content": "", "reasoning_content": "I need both cities.",
       "tool_calls": [call("get_weather", {"city": "Paris"}),
                      call("get_weather", "{\"city\": \"Oslo\"}")]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18 °C"},
      {"role": "tool", "tool_call_id": "call_2", "content": "9 °C"},
      {"role": "assistant", "content": "Let me also say:", "tool_calls": [call("get_weather", {})]},
      {"role": "tool", "content": "?"}], [WEATHER]),
    ("tools_after_answered_turn", False,
     [{"role": "user", "content": "Paris?"},
      {"role": "assistant", "content": "Checking.", "reasoning_content": "call it",
       "tool_calls": [call("get_weather", {"city": "Paris"})]},
      {"role": "tool", "content": "18"},
      {"role": "assistant", "content": "18 degrees.", "reasoning_content": "got it"},
      {"role": "user", "content": "Thanks"},
      {"role": "assistant", "content": "<think>\nwelcome\n</think>\n\nYou're welcome."}], [WEATHER]),
    ("system_parts_with_tools", True,
     [{"role": "system", "content": [{"type": "text", "text": "Part one. "},
                                     {"type": "text", "text": "Part two."}]},
      {"role": "user", "content": "Hi"}], [WEATHER]),
    ("images_in_user_and_tool", True,
     [{"role": "user", "content": [{"type": "text", "text": "Look: "}, IMAGE,
                                   {"type": "text", "text": " and "},
                                   {"type": "image", "image": "/tmp/x.jpg"}]},
      {"role": "assistant", "content": "", "reasoning_content": "need a crop",
       "tool_calls": [call("crop", {"box": [1, 2, 3, 4]})]},
      {"role": "tool", "content": [IMAGE, {"type": "text", "text": "cropped"}]}], None),
    ("late_system_message", True,
     [{"role": "system", "content": "first"}, {"role": "user", "content": "a"},
      {"role": "system", "content": "later"}, {"role": "user", "content": "b"}], None),
    ("assistant_list_content", False,
     [{"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "text", "text": "<think>r</think>"},
                                        {"type": "text", "text": "\nans"}]}], None),
    ("user_text_that_looks_like_a_tool_response", True,
     [{"role": "user", "content": "real question"},
      {"role": "assistant", "content": "a", "reasoning_content": "r1"},
      {"role": "user", "content": "<tool_response>\nfake\n</tool_response>"},
      {"role": "assistant", "content": "b", "reasoning_content": "r2"},
      {"role": "user", "content": "<tool_response>x</tool_response>"}], None),
]


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "..", "..", "..", "shared", "testdata", "qwen3vl-tiny-a")
    with open(os.path.join(HERE, "qwen3vl_thinking_chat_template.jinja"), encoding="utf-8") as f:
        thinking = compile_template(f.read())
    with open(os.path.join(model_dir, "chat_template.json"), encoding="utf-8") as f:
        instruct = compile_template(json.load(f)["chat_template"])
    cases = []
    for name, add_generation_prompt, messages, tools in CASES:
        case = {"name": name, "add_generation_prompt": add_generation_prompt, "messages": messages}
        if tools:
            case["tools"] = tools
        for key, template in (("thinking", thinking), ("instruct", instruct)):
            case[key] = template.render(messages=messages, tools=tools,
                                        add_generation_prompt=add_generation_prompt)
        cases.append(case)
    out = {"_comment": "Written by render_thinking_cases.py (jinja2 " + jinja2.__version__ +
           ", transformers' chat-template environment); do not edit by hand.", "cases": cases}
    with open(os.path.join(HERE, "thinking_template_cases.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
