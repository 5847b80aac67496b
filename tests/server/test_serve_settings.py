"""The two operating keys of ``[server]``: ``log_format`` and ``shutdown_grace_s`` are checked
once, with one line naming the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bastion.cli import main
from bastion.core.errors import ConfigurationError
from bastion.server.settings import ServerSettings


def test_the_defaults_are_text_logs_and_thirty_seconds() -> None:
    settings = ServerSettings.from_dict({})
    assert (settings.log_format, settings.shutdown_grace_s) == ("text", 30)
    chosen = ServerSettings.from_dict({"log_format": "json", "shutdown_grace_s": 0})
    assert (chosen.log_format, chosen.shutdown_grace_s) == ("json", 0)


@pytest.mark.parametrize("value", ["xml", "JSON", 1, None])
def test_a_log_format_other_than_text_or_json_is_refused(value: object) -> None:
    with pytest.raises(ConfigurationError) as caught:
        ServerSettings.from_dict({"log_format": value})
    assert str(caught.value) == 'server: log_format must be "text" or "json"'


@pytest.mark.parametrize("value", [-1, 3601, 1.5, True, "30"])
def test_a_grace_period_that_is_not_whole_seconds_up_to_an_hour_is_refused(value: object) -> None:
    with pytest.raises(ConfigurationError) as caught:
        ServerSettings.from_dict({"shutdown_grace_s": value})
    assert "shutdown_grace_s must be a whole number of seconds from 0 to 3600" in str(caught.value)


def test_serve_refuses_an_unknown_log_format_before_starting(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", "--demo", "--log-format", "xml"])
    assert result.exit_code == 2 and "'xml' is not one of 'text', 'json'" in result.output


def test_a_bad_key_in_the_file_is_one_line_and_nothing_starts(tmp_path: Path) -> None:
    config = tmp_path / "bastion.toml"
    config.write_text(
        '[[mounts]]\nprefix = "/docs"\nurl = "memory:"\n\n[policy]\n\n'
        "[server]\nshutdown_grace_s = -5\n"
    )
    result = CliRunner().invoke(main, ["serve", "--config", str(config)])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "shutdown_grace_s must be" in result.output
