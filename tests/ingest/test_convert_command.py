"""`manage.py convert_bundle`: a file in, a bundle out, or the problems and no bundle."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

SAMPLES = Path(__file__).parent / "samples"


def convert(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("convert_bundle", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_writes_the_bundle_and_names_the_run_after_the_input(tmp_path):
    target = tmp_path / "bundle.jsonl"
    out, _ = convert("--from", "ragas", str(SAMPLES / "ragas-result.jsonl"), "--out", str(target))
    assert out.strip() == f"ragas-result: 12 lines written to {target}"
    run = json.loads(target.read_bytes().splitlines()[0])
    assert run["run_id"] == "ragas-result"


def test_run_id_and_snapshot_can_be_chosen(tmp_path):
    target = tmp_path / "bundle.jsonl"
    source = str(SAMPLES / "alce-asqa.json")
    convert("--from", "alce", source, "--out", str(target), "--run-id", "r9", "--snapshot", "s1")
    run = json.loads(target.read_bytes().splitlines()[0])
    assert (run["run_id"], run["collection_snapshot"]) == ("r9", "s1")


def test_a_refused_input_prints_its_problems_exits_1_and_leaves_no_file(tmp_path):
    source = tmp_path / "broken.jsonl"
    source.write_bytes(b'{"query": "q", "answer": "a", "contexts": [{"text": ""}]}\n')
    target = tmp_path / "bundle.jsonl"
    err = io.StringIO()
    with pytest.raises(CommandError, match="broken.jsonl: not converted") as caught:
        call_command(
            "convert_bundle", "--from", "jsonl-simple", str(source), "--out", str(target),
            stdout=io.StringIO(), stderr=err,
        )  # fmt: skip
    assert caught.value.returncode == 1
    assert err.getvalue() == "line 1: /contexts/0: a context needs a non-empty text\n"
    assert list(tmp_path.iterdir()) == [source]


def test_an_unknown_format_is_a_usage_error(tmp_path):
    with pytest.raises(CommandError, match="invalid choice"):
        convert("--from", "trulens", str(SAMPLES / "simple.jsonl"), "--out", str(tmp_path / "b"))


def test_a_missing_input_is_named(tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        convert("--from", "ragas", "/nonexistent.jsonl", "--out", str(tmp_path / "b"))


def test_an_output_folder_that_does_not_exist_is_named(tmp_path):
    target = tmp_path / "missing" / "bundle.jsonl"
    with pytest.raises(CommandError, match="No such file"):
        convert("--from", "ragas", str(SAMPLES / "ragas-0.1.jsonl"), "--out", str(target))


def test_the_bundle_can_go_to_standard_output(capfdbinary):
    call_command(
        "convert_bundle", "--from", "ragas", str(SAMPLES / "ragas-0.1.jsonl"), "--out", "-"
    )
    written = capfdbinary.readouterr().out
    assert json.loads(written.splitlines()[0])["run_id"] == "ragas-0"


def test_a_snapshot_with_a_control_character_is_refused_before_reading(tmp_path):
    target = tmp_path / "bundle.jsonl"
    source = str(SAMPLES / "alce-asqa.json")
    with pytest.raises(CommandError, match="--snapshot holds at most 200 characters"):
        convert("--from", "alce", source, "--out", str(target), "--snapshot", "a\tb")
    assert not target.exists()
