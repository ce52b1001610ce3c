"""The book's citation entries agree with its one home for the address and release."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_citation_file_and_intro_agree_with_the_release():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    config = (ROOT / "_config.yml").read_text()
    url = re.search(r"^\s+url:\s*(\S+)", config, re.M).group(1)
    release = re.search(r"^\s+release:\s*(\S+)", config, re.M).group(1)
    assert cff["repository-code"] == url
    assert f"v{cff['version']}" == release
    intro = (ROOT / "book" / "intro.md").read_text()
    assert f"Release {release}" in intro and f"url    = {{{url}}}" in intro
