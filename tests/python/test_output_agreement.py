"""The rule that says when a rerun of a docs block prints "the same" (docs/tools/output_agreement.py).

The cases are data (docs/tools/output-agreement-cases.json) that the TypeScript copy of the
rule, which marks docs blocks "reproduced in your browser", replays too
(tests/browser/output-agreement.test.mjs).
"""

import json
import os
import sys

import pytest

TOOLS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "tools")
sys.path.insert(0, TOOLS)

import output_agreement  # noqa: E402

with open(os.path.join(TOOLS, "output-agreement-cases.json"), encoding="utf-8") as _file:
    CASES = json.load(_file)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["why"] for case in CASES])
def test_case(case):
    assert output_agreement.outputs_agree(case["built"], case["rerun"]) is case["agree"]
    # The rule is symmetric: which side was built does not matter.
    assert output_agreement.outputs_agree(case["rerun"], case["built"]) is case["agree"]


def test_a_disagreement_names_the_line_and_both_numbers():
    problem = output_agreement.first_disagreement("a 1\nstep 200  loss 1.2870\n", "a 1\nstep 200  loss 1.2886\n")
    assert problem.startswith("line 2: 1.2870 against 1.2886")


def test_the_cases_cover_both_verdicts():
    assert {case["agree"] for case in CASES} == {True, False}
